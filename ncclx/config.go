package ncclx

/*
#include "abi.h"
*/
import "C"

import "unsafe"

// configField is one field of abi.h's ncclConfig_t: its name in nccl.h,
// its offset and its value in a config (a pointer's as an address).
type configField struct {
	name   string
	offset uintptr
	value  int64
}

// configFields lists cfg's fields in nccl.h's order, so that the tests can
// hold the layout against NCCL 2.28's and against the fake NCCL's own
// declaration: a field at the wrong offset would have NCCL read a wrong
// value, silently.
func configFields(cfg *C.rsag_ncclConfig) []configField {
	return []configField{
		{"size", unsafe.Offsetof(cfg.size), int64(cfg.size)},
		{"magic", unsafe.Offsetof(cfg.magic), int64(cfg.magic)},
		{"version", unsafe.Offsetof(cfg.version), int64(cfg.version)},
		{"blocking", unsafe.Offsetof(cfg.blocking), int64(cfg.blocking)},
		{"cgaClusterSize", unsafe.Offsetof(cfg.cgaClusterSize), int64(cfg.cgaClusterSize)},
		{"minCTAs", unsafe.Offsetof(cfg.minCTAs), int64(cfg.minCTAs)},
		{"maxCTAs", unsafe.Offsetof(cfg.maxCTAs), int64(cfg.maxCTAs)},
		{"netName", unsafe.Offsetof(cfg.netName), int64(uintptr(unsafe.Pointer(cfg.netName)))},
		{"splitShare", unsafe.Offsetof(cfg.splitShare), int64(cfg.splitShare)},
		{"trafficClass", unsafe.Offsetof(cfg.trafficClass), int64(cfg.trafficClass)},
		{"commName", unsafe.Offsetof(cfg.commName), int64(uintptr(unsafe.Pointer(cfg.commName)))},
		{"collnetEnable", unsafe.Offsetof(cfg.collnetEnable), int64(cfg.collnetEnable)},
		{"CTAPolicy", unsafe.Offsetof(cfg.CTAPolicy), int64(cfg.CTAPolicy)},
		{"shrinkShare", unsafe.Offsetof(cfg.shrinkShare), int64(cfg.shrinkShare)},
		{"nvlsCTAs", unsafe.Offsetof(cfg.nvlsCTAs), int64(cfg.nvlsCTAs)},
		{"nChannelsPerNetPeer", unsafe.Offsetof(cfg.nChannelsPerNetPeer), int64(cfg.nChannelsPerNetPeer)},
		{"nvlinkCentricSched", unsafe.Offsetof(cfg.nvlinkCentricSched), int64(cfg.nvlinkCentricSched)},
	}
}

// cConfig names abi.h's ncclConfig_t for the tests, which cannot name C.
type cConfig = C.rsag_ncclConfig
