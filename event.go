package tine

// EventKind names what an [Event] records. Every kind tine writes is one of
// the constants below (or made by [ApprovalEvent] or [EvidenceEvent]), each
// listed in [EventKinds] and in docs/cli.md's table of event kinds.
type EventKind string

// The kinds of the event log, by the command that makes them.
const (
	EventInit         EventKind = "init"            // tine init: the workspace and its source
	EventRebuilt      EventKind = "rebuilt"         // tine doctor --rebuild: the store made again
	EventFork         EventKind = "fork"            // tine fork: on each new fork
	EventForked       EventKind = "forked"          // tine fork: on the parent
	EventCheckpoint   EventKind = "checkpoint"      // tine checkpoint: a version recorded
	EventSaved        EventKind = "saved"           // a run's files kept as a version before they are replaced
	EventRollback     EventKind = "rollback"        // tine rollback
	EventMerge        EventKind = "merge"           // tine merge: on the merged run
	EventMergedInto   EventKind = "merged_into"     // tine merge: on the target
	EventCombinedInto EventKind = "combined_into"   // tine combine: on the target
	EventPromote      EventKind = "promote"         // tine promote: on the new source
	EventRetire       EventKind = "retire"          // tine promote: on the old source
	EventDiscard      EventKind = "discard"         // tine discard
	EventChoose       EventKind = "choose"          // tine choose: a group resolved
	EventStart        EventKind = "start"           // tine start (and fork --live): the supervisor is up
	EventStop         EventKind = "stop"            // tine stop, discard, release: the processes ended
	EventRestart      EventKind = "restart"         // on a fork: its services started again, their live-forked copies having ended with their origin
	EventDisplayIdle  EventKind = "display.idle"    // on a fork: its display stopped, unwatched and undriven for [display] idle_timeout
	EventDisplayWake  EventKind = "display.wake"    // on a fork: its display, stopped idle, started again for a screenshot, input or a tile
	EventPublish      EventKind = "publish"         // tine port: a port published on the host
	EventCell         EventKind = "cell"            // tine cell: a confined command ran
	EventEffect       EventKind = "effect"          // an approved effect carried out
	EventEffectDefer  EventKind = "effect.deferred" // tine effect in a fork: offered once it is promoted
	// EventForkRunStart and the other fork-run kinds are logged by tine fork-run.
	EventForkRunStart     EventKind = "forkrun.start"
	EventForkRunVerdict   EventKind = "forkrun.verdict"
	EventForkRunStopEarly EventKind = "forkrun.stop_early"
	EventForkRunEnd       EventKind = "forkrun.end"
	// EventApprovalPending and the other approval kinds are [ApprovalEvent]'s:
	// an approval reached that state.
	EventApprovalPending  EventKind = "approval_" + EventKind(ApprovalPending)
	EventApprovalApproved EventKind = "approval_" + EventKind(ApprovalApproved)
	EventApprovalConsumed EventKind = "approval_" + EventKind(ApprovalConsumed)
	EventApprovalExpired  EventKind = "approval_" + EventKind(ApprovalExpired)
	EventApprovalRefused  EventKind = "approval_" + EventKind(ApprovalRefused)
	// EventEvidence prefixes what an agent hook in a run reports
	// ([EvidenceEvent]): "evidence.turn_started", "evidence.tool_call", ….
	EventEvidence EventKind = "evidence."
)

// EventKinds lists every kind of the event log, [EventEvidence] standing for
// its whole family.
var EventKinds = []EventKind{
	EventInit, EventRebuilt, EventFork, EventForked, EventCheckpoint, EventSaved, EventRollback,
	EventMerge, EventMergedInto, EventCombinedInto, EventPromote, EventRetire, EventDiscard, EventChoose,
	EventStart, EventStop, EventRestart, EventDisplayIdle, EventDisplayWake, EventPublish, EventCell, EventEffect, EventEffectDefer,
	EventForkRunStart, EventForkRunVerdict, EventForkRunStopEarly, EventForkRunEnd,
	EventApprovalPending, EventApprovalApproved, EventApprovalConsumed, EventApprovalExpired, EventApprovalRefused,
	EventEvidence,
}

// ApprovalEvent is the kind of the event an approval logs on reaching s.
func ApprovalEvent(s ApprovalState) EventKind { return "approval_" + EventKind(s) }

// EvidenceEvent is the kind of the event that records evidence of kind k
// reported from inside a run.
func EvidenceEvent(k string) EventKind { return EventEvidence + EventKind(k) }
