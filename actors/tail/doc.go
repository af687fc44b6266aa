// Package tail reads a stream from outside the operators: a Subscription
// (Registry.Subscribe) deploys a reader operator of a kind only its node
// hosts, whose one instance hands every record to the subscription's
// channel; a reader that does not take records holds its producers back
// by credit, as any slow operator, and nothing is dropped. Close kills the
// reader with purge.
//
// The package does not know the node: it reaches it through the Node
// interface (change the stored topology, look at the route table), which
// package actors implements; the node makes the readers (Registry.Reader)
// for operators of Registry.Kind.
package tail
