// Package mesosstatus is the status the Sluice Mesos framework publishes:
// its types, the Consul KV key that holds it, and ReadStatus. It is a leaf
// (the Consul API client and the standard library only) so that programs
// that only show the framework's status, such as the control API of every
// node, do not link the scheduler and mesos-go.
//
// The leading scheduler (package mesos) writes the Status as JSON to
// Key(cluster) at most StatusDebounce after every change and at least
// every StatusInterval; readers call ReadStatus and look at Updated to
// tell how fresh it is.
//
//	st, err := mesosstatus.ReadStatus(ctx, consulClient, "prod")
//	if errors.Is(err, mesosstatus.ErrNoStatus) { ... no framework yet ... }
package mesosstatus
