package report

// For the tests outside the package (report_test), which build their
// rows with package phase, which imports report.
var (
	CompileSchema = compileSchema
)

// Update is the -update flag: rewrite the golden files.
func Update() bool { return *update }

var FirstDifference = firstDifference

var FixedSummary = fixedSummary
