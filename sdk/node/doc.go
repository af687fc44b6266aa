// Package node runs operators: Start and Run are the composition root of a
// Sluice node, wiring the runtime (package actors) to its collaborators
// from Config's settings: the embedded topology store or a Consul
// membership and guarded topology store (Consul), the checkpoint store
// (Checkpoints), telemetry (Telemetry), the control API and web console
// (HTTP, ControlSecurity) and the local launcher (Launch, LaunchPolicy).
// Operators and connectors import only package sdk; the program that runs
// them imports node:
//
//	err := node.Run(ctx, node.Config{NodeConfig: node.NodeConfig{DataDir: "data"}},
//		func() sdk.Operator { return Counter{} })
//
// Config holds knobs only (Validate names every bad one); the operators
// are Start's and Run's arguments. RegisterNodeFlags and
// RegisterGuaranteeFlags set a Config from a node process's flags and
// SLUICE_* variables (package sdk/nodeenv).
package node
