// Package control is a node's HTTP+JSON control API: what the sluice CLI
// and dashboards talk to. Every node serves it on its HTTP address (the
// address is announced in the cluster membership), and any node answers for
// the whole cluster: it reads the topology from the shared store and asks
// the other nodes for their own status.
//
// Endpoints (JSON types in package control/api):
//
//	GET    /healthz                         200 "ok" while the node takes work; 503 "unhealthy: REASON" (full disk, failed state database)
//	GET    /v1/status                       api.ClusterStatus: nodes, operators, pending items with reasons, launched processes (local launcher and Mesos)
//	GET    /v1/node                         api.NodeStatus: this node only (its instances, members, pending handoffs)
//	GET    /v1/nodes                        []api.NodeView: members with health
//	GET    /v1/operators                    []api.OperatorView: settings, state, placement of every instance
//	GET    /v1/operators/{name}             api.OperatorView
//	POST   /v1/operators                    api.DeployRequest → api.DeployResponse: 201 created, 200 changed,
//	                                        400 with api.Error.Fields naming every bad field, 409 conflict
//	POST   /v1/deployments                  api.DeploymentRequest → api.DeploymentResponse: several operators as one
//	                                        topology change (a pipeline starts whole); all valid or nothing deployed
//	PUT    /v1/operators/{name}/instances   api.ScaleRequest → api.DeployResponse (404 unknown operator)
//	DELETE /v1/operators/{name}[?purge=1]   api.DeployResponse; with purge every node deletes the state
//	GET    /v1/streams                      []api.StreamView: producers, consumers, dangling streams
//	GET    /v1/graph[?format=dot]           text/plain: the graph as text, or Graphviz DOT
//	GET    /v1/streams/{name}/tail[?n=N]    application/x-ndjson: an api.TailRecord a line for every record produced
//	                                        from the answer's header on, until the client goes, N records or the node
//	                                        stops (a reader operator sluice-tail-<random> on this node, see
//	                                        actors.Node.Subscribe; a client reading slowly holds the producers back, one
//	                                        not reading for the write timeout is cut off); 404 for a stream no deployed
//	                                        operator produces or reads
//	GET    /v1/checkpoints                  []api.CheckpointView: complete checkpoints kept in the store, newest first
//	GET    /v1/checkpoints/{id}             api.CheckpointDetail: each node's part, instances, key groups, bytes
//	POST   /v1/checkpoints                  api.CheckpointView of a savepoint taken now, once complete (503 with why
//	                                        it failed); the checkpoint endpoints answer 404 unless exactly-once
//	POST   /v1/node/drain[?timeout=30s]     api.DrainStatus once this node runs no instance: the others took them over,
//	                                        live, with their state (drain.go, actors.Node.Drain); 503 when the timeout
//	                                        passed first (it goes on; ask again), 409 when it cannot be drained
//	GET    /metrics                         Prometheus metrics, when telemetry is on (package telemetry)
//	GET    /v1/console                      api.ConsoleSnapshot: the cluster with records/s per operator, instance and
//	                                        stream, mailbox depth, share of time blocked by backpressure, latency
//	                                        quantiles (Server.SetLatencies), event-time watermarks, recent dead
//	                                        letters with their headers, node CPU and memory
//	GET    /v1/console/events               text/event-stream: "event: snapshot" with an api.ConsoleSnapshot every second
//	                                        (ConsoleInterval) until the client goes or the server shuts down
//	POST   /v1/console/deploy               api.ConsoleDeployRequest (manifest text, YAML or JSON) → api.DeploymentResponse;
//	                                        400 with api.Error.Fields naming the line and field of each problem
//	GET    /ui/                             the web console's pages (package console), served without authentication:
//	                                        they hold no data, and their calls to the endpoints above pass the authenticator
//
// Rates are measured against the previous sample this node took (at most
// every half second, shared by all the console's clients); the share of
// time blocked is the instances' backpressure time (actors'
// InstanceStatus.Blocked) over the same interval.
//
// Changes are check-and-set writes of the topology: a change that races
// another change to the same operator answers 409 with api.Error.Conflict
// set; the nodes apply accepted changes within milliseconds.
//
// # Who may call it
//
// Config.Security (see docs/security.md) sets TLS (certificate and key
// from files, reloaded when they change, via package creds), bearer tokens
// with a role (a "role:token" file, also reloaded) and client certificates
// mapped to roles. With any credential configured, every request but GET
// /healthz and the console's pages (/ui/) passes the authenticator
// (Server.ServeHTTP): no valid credential answers 401, and each route checks its role (GET routes and Handle's
// extra ones need api.RoleRead, changes api.RoleAdmin) and answers 403.
// Without credentials, Listen refuses an address other than loopback
// (ErrNoAuth) and refuses deploys that name an executable, unless
// Security.Insecure (a proxy in front authenticates).
//
// Before authentication, every request passes Server.guard: a Host
// header the node does not serve (DNS rebinding) answers 421, a
// cross-origin change (http.CrossOriginProtection: Sec-Fetch-Site, Origin)
// 403. The connections are bounded without blocking Accept (conns.go): past
// Limits.MaxConns or Limits.MaxConnsPerClient the oldest idle connection,
// one that never authenticated first, is closed, and an unauthenticated
// one idles Limits.UnauthIdleTimeout at most.
//
// Every handler starts with Server.request, which refuses unknown query
// parameters and bodies where none belongs, a body that is not
// application/json (415), bounds the body (Limits.MaxBodyBytes) and
// decodes it with api.Decode; the http.Server has
// read, write and idle timeouts and a header limit (Limits). A node asks
// the others for their status with its own credentials: HTTPS verified
// against the CA bundle, its certificate, its peer token.
package control
