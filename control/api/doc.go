// Package api holds the JSON types of the control API: what a node's HTTP
// server (package control) answers and what clients such as the sluice CLI
// send. It is a leaf package, so clients do not link the runtime.
package api
