package watchdog

// Tracker is what the phases arm (phases.Tracker): the watchdog, told the
// phase its steps belong to. A test that needs a rank to stall stops it
// from outside (a PMPI interposer, SIGSTOP), never through a hook here.
type Tracker struct {
	wd *Watchdog
}

// NewTracker arms wd.
func NewTracker(wd *Watchdog) *Tracker { return &Tracker{wd: wd} }

// SetPhase names the phase the next steps belong to.
func (t *Tracker) SetPhase(name string) { t.wd.Phase(name) }

// Arm starts the deadline of a step.
func (t *Tracker) Arm(op string, bytes int64) { t.wd.Arm(op, bytes) }

// ArmProgress starts the deadline of a step of many parts, which
// progress counts (Watchdog.ArmProgress).
func (t *Tracker) ArmProgress(op string, bytes int64, progress func() int64) {
	t.wd.ArmProgress(op, bytes, progress)
}

// Kick restarts the current step's deadline.
func (t *Tracker) Kick() { t.wd.Kick() }
