// Package control is a node's HTTP+JSON control API: what the sluice CLI
// and operators' dashboards talk to. Every node serves it on its HTTP
// address (announced in the cluster membership).
//
// Endpoints (all JSON):
//
//	GET /healthz      200 "ok" while the node runs
//	GET /v1/status    this node: id, addresses, cluster members, operators
//	                  and their instances here, pending handoffs
//	GET /v1/nodes     the cluster members as this node sees them
//
// Errors are JSON objects {"error": "..."} with a 4xx or 5xx status.
package control
