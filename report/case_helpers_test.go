package report

import "rsag/coll"

// mustDType and mustOp read a dtype or op name that a test writes as text.
func mustDType(s string) coll.DType {
	d, ok := coll.ParseDType(s)
	if !ok {
		panic("unknown dtype " + s)
	}
	return d
}

func mustOp(s string) coll.Op {
	o, ok := coll.ParseOp(s)
	if !ok {
		panic("unknown op " + s)
	}
	return o
}
