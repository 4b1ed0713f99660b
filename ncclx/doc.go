// Package ncclx is rsag's NCCL backend: it binds the CUDA driver API
// (libcuda.so.1) and NCCL (libnccl.so.2) at run time and implements
// coll.Backend with one GPU and one stream per rank. The Backend New
// returns runs on the world's default communicator; WithVariant
// (coll.Variants) gives Backends whose buffers are registered or in
// symmetric windows and whose collectives run on a communicator of another
// CTA policy, and Split (coll.Splitter) Backends of a group of ranks. All
// of them share the device, its buffers and its accounting (variants.go).
//
// Binding follows go-nvml and k8s-device-plugin's internal/cuda, without
// go-nvml's unresolved-symbol linker trick: abi.h declares by hand the few
// types and calls used (no CUDA or NCCL header is needed to build), dl.go
// opens the versioned sonames with dlopen and looks every symbol up at load
// time into a table of function pointers (a missing symbol is named in the
// error), and every call goes through a small C trampoline in abi.h. What
// came after NCCL 2.0 and only the fast paths and Split use is optional, so
// an older NCCL still loads, and a variant that needs what it lacks is
// refused naming the symbol and the NCCL that brought it. NCCL is loaded
// from $RSAG_NCCL_LIBRARY when set.
//
// Every CUresult or ncclResult_t other than success becomes an *Error with
// the library's own name and text for it; CUResult and NCCLResult name codes
// even when no library is loaded.
//
// CUDA's current context is per OS thread: all calls must come from the
// goroutine that called New, which main keeps locked to its thread.
//
// The x is for "extern": the package is named ncclx, not nccl, because it
// binds the external libraries at run time rather than being them, and so
// that its name does not shadow the "nccl" that identifiers, errors and
// config values use for the library itself (the backend is -backend nccl).
package ncclx
