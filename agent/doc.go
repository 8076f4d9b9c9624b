// Package agent drives coding agents (Claude Code, Codex, or any command)
// as subprocesses of a run and turns their output streams into evidence
// and cost.
//
// [Command] and [Env] build the argv and environment for one agent run
// from a [Config], a prompt and an approach; [Check] verifies the binary
// exists before anything forks. [NewParser] returns a line-oriented
// [Parser] for the agent's stream format (Claude Code stream-json, Codex
// exec --json, or a command's plain output with {"tine_cost_usd": X}
// lines) that yields neutral [Event] values. An [Evidence] accumulates
// those events into what a judge and a budget need: the output tail, tool
// calls and commands, tokens, cost, session id, result and wall time.
//
// Costs follow one rule everywhere: a running estimate grows with each
// per-message or per-turn charge, and a final total reported by the agent
// (Claude's total_cost_usd) replaces it. NaN, infinite and negative costs
// count as zero.
package agent
