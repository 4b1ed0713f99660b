package ncclx

/*
#cgo LDFLAGS: -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

// dlerror's text is per thread and valid only until the next dl call, so each
// helper clears it, makes its call and copies the text out in one C call: the
// text is right whatever OS thread the goroutine is on.
static void *rsag_dlopen(const char *path, char *err, size_t n) {
	dlerror();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "dlopen failed");
	}
	return h;
}

static void *rsag_dlsym(void *h, const char *name, char *err, size_t n) {
	dlerror();
	void *p = dlsym(h, name);
	if (p == NULL) {
		const char *e = dlerror();
		snprintf(err, n, "%s", e ? e : "symbol is NULL");
	}
	return p;
}

// rsag_dlpath writes the path of the loaded file that holds addr.
static int rsag_dlpath(void *addr, char *out, size_t n) {
	Dl_info info;
	if (dladdr(addr, &info) == 0 || info.dli_fname == NULL) return 0;
	snprintf(out, n, "%s", info.dli_fname);
	return 1;
}
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// library is a shared library opened with dlopen. It is never closed: CUDA
// and NCCL keep threads and state that outlive any handle we hold.
type library struct {
	name   string // "cuda" or "nccl"
	soname string // what was passed to dlopen
	handle unsafe.Pointer
}

// symbol is one entry of a library's function table: the ABI names to try,
// preferred first, and where to store the address found.
type symbol struct {
	names    []string
	ptr      *unsafe.Pointer
	found    *string // optional: receives the name that was found
	optional bool    // a missing optional symbol leaves *ptr nil
}

func sym(ptr *unsafe.Pointer, names ...string) symbol { return symbol{names: names, ptr: ptr} }

// dlopen opens soname (a bare soname searched the usual way, or a path).
// The calling goroutine stays on one OS thread for the call, like go-nvml's
// dl package; main also locks the main goroutine to its thread in init.
func dlopen(name, soname string) (*library, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cs := C.CString(soname)
	defer C.free(unsafe.Pointer(cs))
	var buf [1024]C.char
	h := C.rsag_dlopen(cs, &buf[0], C.size_t(len(buf)))
	if h == nil {
		return nil, &LoadError{Lib: name, Path: soname, Reason: C.GoString(&buf[0])}
	}
	return &library{name: name, soname: soname, handle: h}, nil
}

// bind looks every symbol of table up and fails naming all required symbols
// that are missing, so that an old or wrong library is reported at load time
// and never crashes mid-run.
func (l *library) bind(table []symbol) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var missing []string
	var buf [1024]C.char
	for _, s := range table {
		*s.ptr = nil
		for _, n := range s.names {
			cs := C.CString(n)
			p := C.rsag_dlsym(l.handle, cs, &buf[0], C.size_t(len(buf)))
			C.free(unsafe.Pointer(cs))
			if p != nil {
				*s.ptr = p
				if s.found != nil {
					*s.found = n
				}
				break
			}
		}
		if *s.ptr == nil && !s.optional {
			missing = append(missing, strings.Join(s.names, " or "))
		}
	}
	if len(missing) > 0 {
		return &LoadError{Lib: l.name, Path: l.path(table), Missing: missing}
	}
	return nil
}

// path returns the file the library was loaded from, with symbolic links
// resolved (libnccl.so.2 -> libnccl.so.2.28.9), found from the address of
// its first bound symbol; the soname when that fails.
func (l *library) path(table []symbol) string {
	for _, s := range table {
		if *s.ptr == nil {
			continue
		}
		var buf [4096]C.char
		if C.rsag_dlpath(*s.ptr, &buf[0], C.size_t(len(buf))) == 0 {
			break
		}
		p := C.GoString(&buf[0])
		if r, err := filepath.EvalSymlinks(p); err == nil {
			if abs, err := filepath.Abs(r); err == nil {
				return abs
			}
			return r
		}
		return p
	}
	return l.soname
}

// LoadError is a shared library that could not be loaded or lacks symbols.
type LoadError struct {
	Lib     string   // "cuda" or "nccl"
	Path    string   // the file or soname that was tried
	Reason  string   // dlopen's message, when the file did not load
	Missing []string // symbols the file lacks, when it loaded
	Hint    string   // what to do about it
}

func (e *LoadError) Error() string {
	var b strings.Builder
	if len(e.Missing) > 0 {
		fmt.Fprintf(&b, "%s: %s lacks %s", e.Lib, e.Path, strings.Join(e.Missing, ", "))
	} else {
		fmt.Fprintf(&b, "%s: cannot load %s: %s", e.Lib, e.Path, e.Reason)
	}
	if e.Hint != "" {
		b.WriteString(": ")
		b.WriteString(e.Hint)
	}
	return b.String()
}
