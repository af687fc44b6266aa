// Package manifest reads and checks operator manifests: the files users
// hand to "sluice deploy" to deploy, change or scale an operator at run
// time. A manifest decodes into api.Manifest, the body the control API
// takes.
//
// A file holds one manifest, several as YAML documents separated by "---",
// or a list of them (a JSON array or a YAML sequence). YAML and JSON read
// the same way: field names are those of api.Manifest's tags, and
// every field but name is optional (zero means "the kind's own setting or
// the default"):
//
//	# count.yaml
//	name: count                 # the operator; required
//	kind: count                 # the registered implementation; defaults to name
//	executable: https://example.com/bin/wordcount-node   # started by a launcher if no node hosts the kind
//	instances: 4                # parallelism
//	keyGroups: 256              # fixed at the first deploy
//	inputs:
//	  - stream: words
//	    routing: group-by       # shuffle (default), round-robin, group-by or broadcast
//	outputs: [counts]
//	cpus: 0.5                   # resources for launchers; mem and disk in MB
//	mem: 256
//	retries: 3                  # process restarts by a launcher
//	environment:
//	  LOG_LEVEL: debug
//	restart:                    # how failing instances are restarted
//	  maxRestarts: 10
//	  window: 1m
//	  initialBackoff: 10ms
//	  maxBackoff: 5s
//	  deadLetterAfter: 3
//	watermarks:                 # a source's event-time watermarks (core.WatermarkStrategy)
//	  outOfOrderness: 2s        # how late an event may be; 0 or absent: monotonic
//	  idleness: 1m              # nothing produced this long: idle, holds nobody back
//	  interval: 100ms           # at most one watermark per interval
//	window:                     # a window operator's windows (core.WindowSpec; kinds built with sdk/window)
//	  type: hopping             # tumbling, hopping, session, count or global; replaces the kind's windows
//	  size: 1m                  # tumbling, hopping
//	  slide: 10s                # hopping
//	  lateness: 5s              # event-time windows; gap: for session, count: for count
//	  emit: on-update           # on-close (default) or on-update
//	autoscale:                  # the autoscaler (core.AutoscaleSpec; docs/autoscaling.md); absent: off
//	  min: 1                    # fewest instances (default 1)
//	  max: 16                   # most instances (default and at most: keyGroups)
//	  targetUtilization: 0.7    # busy fraction each instance is sized for (default 0.7)
//	  scaleDownAfter: 5m        # stabilisation window of down-scales (default 5m)
//	  coolDown: 1m              # least time between two changes (default 1m)
//	  dryRun: false             # only recommend (sluice autoscale status)
//
// A manifest passes two checks. Parse checks the form of the text and
// returns a *ParseError listing every problem with its line: bad syntax,
// unknown fields (usually typos, so the error suggests the field meant),
// keys given twice, values of the wrong type. Validate checks the values
// against the rules (names, ranges, routings, durations, paths) and returns
// a *ValidationError listing every invalid field. Both render each problem
// as "field: what is wrong and what is allowed", for example
//
//	line 3: unknown field "instnaces" (did you mean "instances"?)
//	inputs[1].routing: unknown routing "hash": want shuffle, round-robin, group-by or broadcast
//
// Neither touches the cluster: the server checks what depends on the
// running kinds when the manifest is deployed.
package manifest
