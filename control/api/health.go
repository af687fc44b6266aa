package api

import "time"

// NodeHealth is a node's account of whether it takes work: GET /healthz
// answers 200 "ok" while Healthy, else 503 "unhealthy: " and Reason.
type NodeHealth struct {
	Healthy bool `json:"healthy"`
	// Reason says why not (a full disk, a failed state database).
	Reason string `json:"reason,omitempty"`
	// Cause is "disk-full" or "store-failed" when unhealthy.
	Cause string `json:"cause,omitempty"`
	// Fatal means the node cannot recover without a restart.
	Fatal bool `json:"fatal,omitempty"`
	// DiskFree and DiskTotal are the bytes free and in all on the node's
	// data directory's file system.
	DiskFree  uint64 `json:"diskFree"`
	DiskTotal uint64 `json:"diskTotal"`
	// Since is when Healthy last changed.
	Since time.Time `json:"since"`
}
