// Package window provides window operators with incremental aggregation:
// tumbling, hopping (sliding), session, count and global windows per
// record key, closed by event-time timers as the watermark passes them.
//
// A window operator reads one stream with group-by routing and keeps, per
// (key, window), one accumulator of an Aggregator in State, never the
// window's records (unless the aggregator collects them, as Collect does).
// A record is added to every window it belongs to; the watermark passing a
// window's end fires the window's event timer, which produces the result
// (OnClose, the default) and removes the window's state, or keeps it until
// end + Config.Lateness so that late records update it (each producing an
// updated result). A record too late for all of its windows goes to the
// "<operator>.late" stream unchanged. With OnUpdate every record produces
// its windows' current results.
//
// State holds one entry per key for its tumbling or hopping windows (a
// record in size/slide windows writes State once), with one event timer
// per key at its windows' earliest deadline; one entry and timer per
// session, count or global window. Each instance also keeps the decoded
// accumulators of up to Config.CacheWindows entries in memory and knows
// which entries State lacks, so a record costs map lookups and Add calls
// rather than State reads; every change is still written to State in the
// same callback, so commits, checkpoints, restores and rescales see exact
// state and a restarted or moved instance reloads it in Init. Aggregators
// must therefore not keep a record's slices in an accumulator (see
// Aggregator).
//
//	counts, err := window.New(window.Config{
//		Name: "views-per-campaign", Input: "views", Output: "view-counts",
//		Windows: window.Tumbling(10 * time.Second),
//	}, window.Count())
//	// counts is an sdk.Factory: pass it to node.Run with the other operators.
//
// A result record has the window's key as Key, the aggregator's Result as
// Value and, for event-time windows, the window's bounds in the
// HeaderStart and HeaderEnd headers (Unix nanoseconds; Bounds parses them)
// and end − 1 ns as EventTime, so that a downstream window operator puts
// it in the same window.
//
// The operator's Metadata declares its windows (Metadata.Window, an
// sdk.WindowSpec) and its late stream whatever they are, so a manifest may
// deploy the kind with other windows:
//
//	name: views-per-minute
//	kind: views-per-campaign
//	window: {type: hopping, size: 1m, slide: 10s, lateness: 5s}
//
// Each instance runs the windows deployed (InstanceInfo.Window, taken in
// Init), which the control API checks with the rules New applies
// (core.WindowSpec.Problems). They are fixed once the operator is
// deployed: its state is laid out by them.
//
// Bad input: New rejects a window size, slide, gap or count ≤ 0, a slide
// larger than the size and a negative lateness with a *ConfigError naming
// the operator and the field; a manifest's window mapping is refused at
// deploy time by the same rules (and for fields of another type, such as
// a gap on tumbling windows), naming the operator and the field
// ("window.size"). A record without an event time under an event-time
// window fails with ErrNoEventTime (the runtime retries it, then sends it
// to "<operator>.deadletter" with the error), so it never lands in a
// wrong window.
//
// Operators are tested with sdk/sdktest, which drives the watermark
// deterministically.
package window
