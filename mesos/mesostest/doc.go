// Package mesostest is an in-process Mesos master for testing schedulers
// written against the v1 scheduler HTTP API (for example with
// github.com/mesos/mesos-go/api/v1/lib/httpcli/httpsched). It serves the
// real wire protocol on 127.0.0.1 and simulates agents whose tasks run as
// real local processes, so a scheduler under test cannot tell it from a
// small Mesos cluster in the ways that matter to a scheduler.
//
// # Usage
//
//	m, err := mesostest.New(mesostest.Config{HeartbeatInterval: time.Second})
//	if err != nil { ... }
//	defer m.Close()
//	_ = m.AddAgent("agent-1", 4, 4096, 10240)
//	// point the scheduler at m.SchedulerEndpoint()
//	err = m.WaitUntil(ctx, func() bool { return len(m.Tasks()) == 1 })
//
// Test control: AddAgent, AddAgentSpec, LoseAgent, KillTaskProcess,
// RescindOffers, RejectSubscribe, FailAccept; snapshots: State, Agents,
// Frameworks, Offers, Tasks, RunningProcesses, AllocationRounds; and
// WaitUntil, which re-evaluates a condition after every state change so
// tests never need to sleep.
//
// # Protocol
//
// The behaviour follows the Mesos documentation, chiefly
// docs/scheduler-http-api.md
// (https://mesos.apache.org/documentation/latest/scheduler-http-api/), and,
// where the documentation is silent, the Mesos master sources
// (src/master/http.cpp Master::Http::scheduler, src/master/validation.cpp,
// src/master/master.cpp):
//
//   - POST /api/v1/scheduler only (405 otherwise). Content-Type must be
//     exactly application/x-protobuf or application/json: missing is 400,
//     anything else 415 Unsupported Media Type. Bodies that do not parse,
//     and calls failing validation (missing type, missing framework_id,
//     missing call body, ACKNOWLEDGE uuid not 16 bytes, SUBSCRIBE whose
//     framework_id differs from framework_info.id) are 400.
//   - Like Mesos, the Accept header is negotiated only for SUBSCRIBE (and
//     RECONCILE_OPERATIONS): it must allow application/json or
//     application/x-protobuf (JSON is preferred when both are allowed; a
//     missing header allows both), else 406 Not Acceptable. Other calls
//     return 202 with no body whatever their Accept header says.
//   - SUBSCRIBE must not carry Mesos-Stream-Id (400). It is answered
//     200 OK, Content-Type the negotiated media type, a fresh
//     Mesos-Stream-Id (a UUID) header, and a chunked body of RecordIO
//     records ("<decimal length>\n<bytes>", never zero-length) holding
//     events in that media type: SUBSCRIBED first (framework_id,
//     heartbeat_interval_seconds, master_info), then HEARTBEAT every
//     Config.HeartbeatInterval and all other events.
//   - Every other call must name a framework the master knows (else 400
//     "Framework cannot be found"), which must currently be subscribed
//     (else 403 Forbidden "Framework is not subscribed" - this is the
//     status a scheduler sees after its subscription was dropped or taken
//     over), and must carry the Mesos-Stream-Id of that subscription
//     (missing or different: 400). Accepted calls are answered 202
//     Accepted (UPDATE_FRAMEWORK: 200 with an empty body).
//   - JSON uses the same encoding as mesos-go's encoding/codecs (the ffjson
//     methods of the generated types, via encoding/json): snake_case field
//     names, enum names as strings, bytes in base64. Unknown JSON fields
//     (e.g. the long removed subscribe.force) are ignored.
//
// # Frameworks, failover and disconnection
//
// From "SUBSCRIBE" and "Disconnections" in scheduler-http-api.md:
//
//   - A SUBSCRIBE without framework ID registers a new framework and
//     assigns it "<master id>-NNNN".
//   - A SUBSCRIBE with a known framework ID while the framework is
//     connected fails it over: the old stream receives ERROR "Framework
//     failed over" and is closed, the new one gets SUBSCRIBED with the same
//     ID. Mesos has done this unconditionally since MESOS-4712 ("Always
//     failover the old framework connection" in Master::subscribe): the
//     subscribe.force field of early v1 versions no longer exists (mesos-go
//     v0.0.11's Call_Subscribe has no such field), so there is no
//     non-forced variant that refuses the new connection.
//   - When a subscription connection drops, the framework is disconnected:
//     its outstanding offers are withdrawn, events for it are dropped,
//     non-SUBSCRIBE calls get 403, and FrameworkInfo.failover_timeout
//     starts (default 0, i.e. immediate removal). Re-subscribing with the
//     framework ID within the timeout restores it with its tasks still
//     running; unacknowledged status updates are then resent and offers are
//     regenerated. When the timeout expires the framework is removed and
//     its tasks are killed; a later SUBSCRIBE with its ID gets an ERROR
//     event "Framework has been removed". TEARDOWN removes the framework at
//     once and closes its stream.
//   - A SUBSCRIBE with an ID the master never saw is accepted with that ID,
//     as a Mesos master accepts frameworks after its own failover.
//   - RejectSubscribe makes SUBSCRIBE fail with an HTTP status (e.g. 401,
//     what an authenticating master returns for bad credentials) or with
//     an ERROR event on a 200 stream (what Mesos does for unauthorized or
//     invalid FrameworkInfo).
//
// # Offers
//
// Agents have unreserved scalar cpus, mem and disk. In every allocation
// round (each Config.AllocationInterval, and right after subscriptions,
// new agents, task terminations, REVIVE and rescissions) the unused
// resources of each agent are offered as one offer to one subscribed,
// non-suppressed framework (frameworks take turns), provided they reach the
// master's default minimum allocatable resources (cpus 0.01 or mem 32).
// Offer resources carry role "*" and allocation_info with the framework's
// role. All offers of a round for a framework arrive in one OFFERS event.
//
//   - DECLINE, and the unused part of an ACCEPT, refuse those resources to
//     the framework for Filters.refuse_seconds (default 5, capped at one
//     year, 0 for no filter); like the Mesos allocator the filter only
//     applies while the agent's available resources are a subset of the
//     refused ones. REVIVE clears all filters and SUPPRESS stops offers
//     until REVIVE (outstanding offers stay valid).
//   - RescindOffers sends RESCIND and re-offers the resources later;
//     Config.OfferTimeout does the same for old offers.
//
// # Tasks
//
// ACCEPT with LAUNCH (and LAUNCH_GROUP) operations is validated as by
// Master::accept; the call itself is always 202 (unless FailAccept is in
// effect). Per docs/task-state-reasons.md:
//
//   - Unknown, already used, rescinded or foreign offer IDs, or offers on
//     different agents: every task of the call gets TASK_LOST
//     (TASK_DROPPED for PARTITION_AWARE frameworks), reason
//     REASON_INVALID_OFFERS, message "Task launched with invalid offers:
//     ...".
//   - A task that is itself invalid gets TASK_ERROR, reason
//     REASON_TASK_INVALID (REASON_TASK_GROUP_INVALID for a task group):
//     invalid or duplicate task ID, wrong agent ID, no CommandInfo, no
//     resources, or resources beyond what is left of the offers after the
//     preceding tasks ("Total resources ... required by task and its
//     executor is more than available ...").
//   - These master-generated updates have SOURCE_MASTER and no uuid, so
//     they are not retried and must not be acknowledged.
//
// Each valid task runs as a local process in its own process group, in a
// sandbox directory below WorkDir: CommandInfo with shell=true (the
// default) runs "/bin/sh -c <value>", shell=false executes value with
// arguments as argv. The environment is the test process' own environment
// (as an agent passes its environment to executors), plus MESOS_SANDBOX,
// MESOS_DIRECTORY, MESOS_TASK_ID, MESOS_AGENT_ID, MESOS_FRAMEWORK_ID and
// MESOS_EXECUTOR_ID, plus CommandInfo.environment. stdout and stderr go to
// the sandbox files "stdout" and "stderr". CommandInfo.uris with a file://
// URL or an absolute path are copied into the sandbox (as output_file if
// set); executable=true makes the copy mode 0755.
//
// Status updates of a task are generated as the agent and command executor
// would: TASK_STARTING and TASK_RUNNING once the process started;
// TASK_FINISHED on exit status 0, TASK_FAILED on a non-zero status or a
// signal ("Command exited with status 1", "Command terminated with signal
// Killed"); TASK_FAILED with REASON_CONTAINER_LAUNCH_FAILED if fetching or
// starting fails; TASK_KILLED after KILL (SIGTERM to the process group,
// SIGKILL after the kill policy's grace period, default
// Config.KillGracePeriod; TASK_KILLING first for frameworks with the
// TASK_KILLING_STATE capability). These updates carry a uuid and are
// delivered reliably, as in "ACKNOWLEDGE" of scheduler-http-api.md and the
// agent's status update manager: per task only the oldest unacknowledged
// update is sent, resent with exponential backoff starting at
// Config.StatusUpdateRetryInterval until an ACKNOWLEDGE with its uuid
// arrives, then the next one is sent. Resources are released when the
// terminal update is generated; the master forgets a task once its
// terminal update is acknowledged.
//
// KILL of an unknown task is answered like explicit reconciliation (the
// HTTP API doc: "If the task is unknown to the master, a TASK_LOST will
// be generated"). RECONCILE follows docs/reconciliation.md and
// Master::_reconcileTasks: an empty list reports the latest state of every
// task the master still tracks for the framework; an explicit list reports
// each known task's latest state and, for unknown ones, TASK_LOST (for
// PARTITION_AWARE frameworks TASK_GONE if the agent is registered,
// TASK_UNREACHABLE if it was lost, TASK_UNKNOWN otherwise); all with
// REASON_RECONCILIATION, SOURCE_MASTER and no uuid.
//
// LoseAgent does what the master does when an agent is removed (FAILURE
// in scheduler-http-api.md): outstanding offers on it are rescinded, its
// tasks get TASK_LOST (TASK_UNREACHABLE for PARTITION_AWARE frameworks,
// reason REASON_AGENT_REMOVED, no uuid), every framework gets a FAILURE
// event with the agent ID, and the task processes are killed.
// KillTaskProcess SIGKILLs a task's process to simulate a crash.
//
// # Simplifications
//
// Not modelled: master or agent failover and the registry, 307 redirects
// to a leading master, authentication (other than RejectSubscribe),
// reservations, persistent volumes and all offer operations other than
// LAUNCH and LAUNCH_GROUP (ignored), ports and other non-scalar resources,
// multiple roles per framework (MULTI_ROLE frameworks are offered
// resources for their first role only), DRF (one framework gets all of an
// agent's unused resources), custom executors (TaskInfo.executor is
// rejected with TASK_ERROR) and therefore MESSAGE and SHUTDOWN (accepted
// and dropped), containers and ContainerInfo (ignored), CommandInfo.user
// (tasks run as the test's user), secrets, URI extraction and caching
// (archives are copied unextracted), health checks, inverse offers and
// operation feedback. ACCEPT/DECLINE with an offer of another framework is
// handled like an unknown offer.
package mesostest
