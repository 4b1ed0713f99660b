package job

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"

	"rsag/config"
	"rsag/ncclx"
)

// loadConfig has rank 0 read the file and broadcast its bytes, so every rank
// parses and validates the same bytes and fails, if it fails, alike.
func (s *session) loadConfig() (config.Config, error) {
	var msg []byte
	if s.comm.Rank() == 0 {
		// ReadFile opens only a regular file, but one on a file system that
		// stops answering (a hung NFS mount) still blocks: the watchdog
		// names the file, here and on the ranks that wait for it below.
		// The watchdog's alone, not a step: every rank's steps are numbered
		// alike (watchdog.State), and one that rank 0 alone took put it a
		// step ahead of the others in every hang (issue 57, item 4).
		s.wd.Arm("reading the config file "+s.opts.ConfigPath, -1)
		data, err := config.ReadFile(s.opts.ConfigPath)
		if err != nil {
			msg = append([]byte{1}, fmt.Sprintf("cannot read the config: %v (give an existing TOML file with -config, e.g. configs/smoke.toml)", err)...)
		} else {
			msg = append([]byte{0}, data...)
		}
	}
	s.tr.Arm("config broadcast (rank 0 reads "+s.opts.ConfigPath+")", -1)
	defer s.tr.Leave()
	msg, err := s.comm.BcastBlob(msg, 0)
	if err != nil {
		return config.Config{}, err
	}
	if len(msg) == 0 {
		return config.Config{}, errors.New("config broadcast arrived empty")
	}
	if msg[0] == 1 {
		return config.Config{}, errors.New(string(msg[1:]))
	}
	if err := s.agreeInputs(); err != nil {
		return config.Config{}, err
	}
	cfg, err := config.Parse(s.opts.ConfigPath, msg[1:], s.opts.Sets)
	if err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate(s.comm.Size())
}

// agreeInputs refuses, on every rank alike, a job whose ranks were started
// with different inputs (an MPMD command line, a wrapper script): the file
// bytes are rank 0's on every rank, but -set, -output-dir, -backend and
// -overwrite are each rank's own, and ranks that ran different configs
// would wait for each other in different collectives.
func (s *session) agreeInputs() error {
	inputs := []struct{ name, value string }{
		{"-set", strings.Join(s.opts.Sets, "\x00")},
		{"-output-dir", s.opts.OutputDir},
		{"-history", s.opts.History},
		{"-backend", s.opts.Backend},
		{"-overwrite", fmt.Sprint(s.opts.Overwrite)},
	}
	var mine []byte
	for _, in := range inputs {
		sum := sha256.Sum256([]byte(in.value))
		mine = append(mine, sum[:]...)
	}
	s.tr.Arm("agreement between ranks", -1)
	defer s.tr.Leave()
	all, err := s.comm.AllGather(mine)
	if err != nil {
		return err
	}
	var diffs []string
	for i, in := range inputs {
		var ranks []int
		for r, theirs := range all {
			if !bytes.Equal(theirs[i*sha256.Size:(i+1)*sha256.Size], all[0][i*sha256.Size:(i+1)*sha256.Size]) {
				ranks = append(ranks, r)
			}
		}
		if len(ranks) > 0 {
			diffs = append(diffs, fmt.Sprintf("%s differs from rank 0's on %s", in.name, rankList(ranks, len(all))))
		}
	}
	if len(diffs) > 0 {
		return shared(ExitBadArgs, fmt.Errorf("the ranks were started with different inputs: %s; start every rank with the same flags",
			strings.Join(diffs, "; ")))
	}
	return nil
}

// checkEnvironment refuses, on every rank alike, a variable of rsag's own
// set to a value it does not take. Each rank has its own environment (a
// launcher may pass it to some ranks only), so the ranks agree on it.
func (s *session) checkEnvironment() error {
	_, err := ncclx.BlockingWait(s.getenv(ncclx.WaitEnv))
	return s.agree(err, ExitBadArgs, "bad environment")
}
