// Package core defines the types shared by the public SDK and the runtime:
// records, operators, their metadata and the context handed to callbacks.
//
// Users never import core: package sdk re-exports every name here as an
// alias, and the runtime (package actors) implements the interfaces. Keeping
// the definitions in a leaf package lets sdk both expose them and start the
// runtime without an import cycle.
package core
