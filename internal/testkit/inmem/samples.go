package inmem

import (
	"bytes"
	"fmt"
	"sync/atomic"
	"time"

	"rsag/coll"
)

var _ coll.SampleTimer = (*Backend)(nil)

// PrepareSamples takes timed samples of c with Run in a Go loop
// (coll.SampleTimer), as the MPI backend does in C, so that the phases'
// path for it runs in tests, faults included.
func (be *Backend) PrepareSamples(c coll.Collective, send, recv coll.Buffer, op coll.Op) (coll.Sampler, error) {
	if _, ok := calls[c.Name]; !ok {
		return nil, fmt.Errorf("inmem: no call for the %s collective", c.Name)
	}
	if err := coll.CheckShapes(c, send, recv, be.WorldSize()); err != nil {
		return nil, err
	}
	buf, out, err := be.Bytes("PrepareSamples", recv)
	if err != nil {
		return nil, err
	}
	return &sampler{be: be, c: c, send: send, recv: recv, op: op, out: out, elem: buf.DType().Size()}, nil
}

type sampler struct {
	be          *Backend
	c           coll.Collective
	send, recv  coll.Buffer
	op          coll.Op
	out         []byte
	elem        int
	part, began atomic.Int64
}

func (s *sampler) Samples(batch int, barrier bool, us []float64, held []bool, check coll.OutputCheck) (coll.SampleFault, error) {
	f := coll.SampleFault{Sample: -1, Element: -1}
	for i := range us {
		s.began.Store(time.Now().UnixNano())
		s.part.Store(int64(i))
		var took time.Duration
		start := time.Now()
		for range batch {
			if barrier {
				if _, err := s.be.job.meet(s.be.group, s.be.rank, "barrier", nil); err != nil {
					return f, err
				}
				start = time.Now()
			}
			if err := s.be.Run(s.c, s.send, s.recv, s.op); err != nil {
				return f, err
			}
			if barrier {
				took += time.Since(start)
			}
		}
		if !barrier {
			took = time.Since(start)
		}
		us[i] = float64(took.Nanoseconds()) / 1e3
		if len(check.Spans) == 0 {
			continue
		}
		held[i] = true
		for _, sp := range check.Spans {
			got, want := s.out[sp.Offset:sp.Offset+sp.Len], check.Want[sp.WantAt:sp.WantAt+sp.Len]
			if bytes.Equal(got, want) {
				continue
			}
			held[i] = false
			if f.Sample < 0 {
				b := 0
				for got[b] == want[b] {
					b++
				}
				b -= b % s.elem
				f = coll.SampleFault{Sample: i, Element: (sp.Offset + b) / s.elem, Got: bytes.Clone(got[b : b+s.elem])}
			}
			break
		}
	}
	return f, nil
}

func (s *sampler) Progress() (int, time.Time) {
	began := s.began.Load()
	if began == 0 {
		return int(s.part.Load()), time.Time{}
	}
	return int(s.part.Load()), time.Unix(0, began)
}
