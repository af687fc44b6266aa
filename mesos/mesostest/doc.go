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
// Test control: AddAgent, AddAgentSpec (ports, static reservations),
// LoseAgent, PartitionAgent, HealAgent, MarkAgentGone, KillTaskProcess,
// FailOver (several masters: Config.Masters), StallSubscription,
// DropSubscriptionSilently, SetAcceptDelay, RescindOffers,
// RejectSubscribe, FailAccept; snapshots: State, Agents, Frameworks,
// Offers, Tasks, Calls, RunningProcesses, AllocationRounds; and WaitUntil,
// which re-evaluates a condition after every state change so tests never
// need to sleep. FreePorts picks ports for agents at run time.
//
// # Protocol
//
// The behaviour follows the Mesos documentation, chiefly
// docs/scheduler-http-api.md, docs/reconciliation.md, docs/high-availability.md
// and docs/persistent-volume.md
// (https://mesos.apache.org/documentation/latest/scheduler-http-api/), and,
// where the documentation is silent, the Mesos master sources
// (src/master/http.cpp Master::Http::scheduler, src/master/validation.cpp,
// src/master/master.cpp):
//
//   - With Config.Credentials the masters require HTTP framework
//     authentication (--authenticate_http_frameworks, --credentials, the
//     default "basic" authenticator): a request without HTTP Basic
//     credentials, or with a principal or secret not in Credentials, is
//     answered 401 with `WWW-Authenticate: Basic realm="mesos-master-scheduler"`
//     and an empty body, before any other check, as libprocess
//     authenticates a request before its handler runs. A SUBSCRIBE whose
//     FrameworkInfo.principal differs from the authenticated principal is
//     a validation error (400, validation::scheduler::call::validate). See
//     auth.go.
//   - A master that does not lead answers 307 with Location
//     "//<leader>/api/v1/scheduler" (a protocol-relative URL), or 503 "No
//     leader elected"; a new leader answers 503 "Master has not finished
//     recovery" for Failover.Recovery. These checks come first, as in
//     Master::Http::scheduler. See masters.go.
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
//   - FailOver changes the leading master (Config.Masters of them): every
//     subscription closes and frameworks must subscribe again at the new
//     leader, which, once recovered, knows each agent's tasks only after
//     the agent re-registered (Failover.LateAgents); until then their
//     explicit reconciliation goes unanswered and their updates wait.
//   - StallSubscription silences a subscription stream (no events, no
//     heartbeats) that stays open and subscribed; DropSubscriptionSilently
//     makes it half-open: the master drops the subscription, the
//     scheduler's connection is never closed nor written to.
//
// # Offers
//
// Agents have unreserved scalar cpus, mem and disk, "ports" ranges, and
// static reservations for roles (AgentSpec). In every allocation round
// (each Config.AllocationInterval, and right after subscriptions, new
// agents, task terminations, REVIVE and rescissions) the unused resources
// of each registered agent are offered to the subscribed, non-suppressed
// frameworks in turn: one gets the unreserved resources and those reserved
// for its role as one offer, the next what is left for its role, provided
// a share reaches the master's default minimum allocatable resources (cpus
// 0.01 or mem 32). Frameworks take turns across rounds. All offers of a
// round for a framework arrive in one OFFERS event. Offers to MULTI_ROLE
// frameworks carry allocation_info with the framework's role (to others
// none, as MESOS-8237 strips it); reservations are shown in the
// RESERVATION_REFINEMENT format ("reservations") to frameworks with that
// capability, else as "role" and "reservation".
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
// ACCEPT is validated as by Master::accept and _accept (operations.go);
// the call itself is always 202 (unless FailAccept is in effect). Its
// operations are applied in order to the offered resources: RESERVE and
// UNRESERVE (dynamic reservations for the framework's role, by its
// principal), CREATE and DESTROY (persistent volumes on reserved disk,
// with a directory on the agent that tasks see at the container path),
// LAUNCH and LAUNCH_GROUP. Resources without allocation_info get the
// offer's (protobuf::injectAllocationInfo: a launch that leaves it out is
// valid on a real master; Config.StrictAllocationInfo refuses it, to test
// that a scheduler keeps it); resources allocated to another role, or kinds
// not in the offer (a reservation that does not exist, ports that were not
// offered), make a task invalid. An invalid RESERVE, UNRESERVE, CREATE or
// DESTROY is dropped (operation feedback is not modelled). SetAcceptDelay
// applies the operations later, as Mesos does after authorizing them.
// Per docs/task-state-reasons.md:
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
// KILL of an unknown task is answered like explicit reconciliation
// (Master::kill). RECONCILE follows docs/reconciliation.md and
// Master::reconcile (reconcile.go): an empty list reports the latest state
// of every task the master knows for the framework; an explicit list
// reports each known task's latest state and, for unknown ones, nothing
// while their agent (or, without an agent ID, any agent) has not
// re-registered after a master failover, else TASK_LOST (for
// PARTITION_AWARE frameworks TASK_GONE if the agent is registered,
// TASK_UNREACHABLE if it is unreachable, TASK_GONE_BY_OPERATOR if it was
// marked gone, TASK_UNKNOWN otherwise); all with REASON_RECONCILIATION,
// SOURCE_MASTER and no uuid.
//
// With Config.EnforcePorts the agents run the network/ports isolator
// (isolator.go): a task listening on a TCP port that is not in its "ports"
// resources is killed, TASK_FAILED with REASON_CONTAINER_LIMITATION.
//
// # Agents that go away and come back
//
// PartitionAgent and LoseAgent make the master mark an agent unreachable
// (Master::markUnreachable): outstanding offers on it are rescinded, its
// tasks get TASK_UNREACHABLE (TASK_LOST for frameworks that are not
// PARTITION_AWARE; reason REASON_AGENT_REMOVED, no uuid, not retried),
// every framework gets a FAILURE event with the agent ID, and the master
// no longer knows the tasks (reconciliation answers TASK_UNREACHABLE, KILL
// is not remembered). After LoseAgent the machine is dead: its processes
// are killed and it never comes back. After PartitionAgent it lives on:
// its processes keep running (or are stopped with SIGSTOP when the
// partition isolates it from everything), updates they cause wait, and
// HealAgent re-registers it as Mesos 1.5+ does for every framework: each
// task is reported again with its latest state (reason
// REASON_AGENT_REREGISTERED, no uuid), nothing is killed, waiting updates
// follow. MarkAgentGone is the operator's MARK_AGENT_GONE: its tasks get
// TASK_GONE_BY_OPERATOR (REASON_AGENT_REMOVED_BY_OPERATOR) and whatever
// still runs there is killed. KillTaskProcess SIGKILLs a task's process to
// simulate a crash.
//
// # Simplifications
//
// Not modelled: agent restarts and checkpoint recovery, the registry's
// garbage collection of unreachable agents and the agent re-registration
// timeout after a master failover, SASL (v0 API) authentication, HTTP
// authenticators other than Basic with Config.Credentials, authorization
// (ACLs; RejectSubscribe can imitate a refusal), reservation refinement (stacked reservations), shared
// and revocable resources, resource providers, SET resources, operation
// feedback and all offer operations other than RESERVE, UNRESERVE, CREATE,
// DESTROY, LAUNCH and LAUNCH_GROUP (ignored), multiple roles per framework
// (MULTI_ROLE frameworks are offered resources for their first role only),
// DRF (one framework gets all of an agent's unused resources), custom
// executors (TaskInfo.executor is
// rejected with TASK_ERROR) and therefore MESSAGE and SHUTDOWN (accepted
// and dropped), containers and ContainerInfo (ignored), CommandInfo.user
// (tasks run as the test's user), secrets, URI extraction and caching
// (archives are copied unextracted), health checks, inverse offers and
// operation feedback. ACCEPT/DECLINE with an offer of another framework is
// handled like an unknown offer.
package mesostest
