package judge

import (
	"fmt"
	"sort"
	"strings"
)

// maxNamed is how many other candidates a rationale names one by one.
const maxNamed = 3

// rationale says in one or two sentences what decided the heuristic's
// verdict over as (best first), given the winner's separation (1 for a
// single candidate).
func rationale(as []*assessed, sep float64) string {
	w := as[0]
	var b strings.Builder
	switch {
	case len(as) == 1:
		fmt.Fprintf(&b, "%s is the only candidate: %s.", w.c.label(), summary(w))
	case as[1].score == w.score:
		return tie(as)
	default:
		why := deciding(as)
		if ru := as[1]; ru.factor < w.factor {
			why = append([]string{fmt.Sprintf("%s is penalised (%s)", ru.c.label(), strings.Join(ru.penalties, "; "))}, why...)
		}
		if len(why) == 0 { // cannot happen with a lead, but say something true
			why = []string{fmt.Sprintf("higher score (%.2f vs %.2f for %s)", w.score, as[1].score, as[1].c.label())}
		}
		fmt.Fprintf(&b, "%s: %s.", w.c.label(), strings.Join(why, ", "))
	}
	if w.abs < sep {
		fmt.Fprintf(&b, " Raw confidence is limited to %.2f because %s.", w.abs, strings.Join(weaknesses(w), " and "))
	}
	return b.String()
}

// tie explains a verdict whose winner scores the same as the runner-up.
func tie(as []*assessed) string {
	w, names := as[0], []string{as[0].c.label()}
	same := true
	for _, a := range as[1:] {
		if a.score != w.score {
			break
		}
		names = append(names, a.c.label())
		same = same && a.g == w.g
	}
	if same {
		return fmt.Sprintf("No evidence separates %s (each: %s); %s is first in approach order, so the raw confidence is 0.",
			joinAnd(names), summary(w), w.c.label())
	}
	return fmt.Sprintf("%s score the same (%.2f) on different evidence; %s is first in approach order, so the raw confidence is 0.",
		joinAnd(names), w.score, w.c.label())
}

// deciding phrases the additive features on which the winner leads the
// runner-up, the largest lead first, at most three. (The evidence features
// multiply the score; a runner-up's are said as its penalties.)
func deciding(as []*assessed) []string {
	w, ru := as[0], as[1]
	var fs []feature
	for f := range numAdditive {
		// A runner-up that changed nothing has no diff to be smaller than.
		if w.g[f] > ru.g[f] && (f != featSize || ru.changed) {
			fs = append(fs, f)
		}
	}
	lead := func(f feature) float64 { return weight[f] * (w.g[f] - ru.g[f]) }
	sort.SliceStable(fs, func(i, j int) bool { return lead(fs[i]) > lead(fs[j]) })
	var out []string
	for _, f := range fs[:min(len(fs), 3)] {
		out = append(out, phrase(f, as))
	}
	return out
}

// phrase says how the winner, as[0], leads on f.
func phrase(f feature, as []*assessed) string {
	w, ru := as[0], as[1]
	switch f {
	case featChanges:
		return fmt.Sprintf("%s (%s)", changesWord(w), others(as, changesWord))
	case featTests:
		return fmt.Sprintf("tests %s (%s)", testWord[w.tests], others(as, func(a *assessed) string { return testWord[a.tests] }))
	case featAgent:
		return fmt.Sprintf("agent %s (%s)", agentState(w), others(as, agentState))
	case featMerge:
		return fmt.Sprintf("%s (%s)", mergeWord(w), others(as, mergeWord))
	case featSignals:
		return fmt.Sprintf("fewer error signals (%d vs %d for %s)", w.signals, ru.signals, ru.c.label())
	}
	if w.tests == ru.tests {
		return fmt.Sprintf("smaller diff among %s forks (%d lines vs %d for %s)", testGroup[w.tests], w.lines, ru.lines, ru.c.label())
	}
	return fmt.Sprintf("smallest diff among %s forks (%d lines)", testGroup[w.tests], w.lines)
}

// others describes the candidates other than the winner, as[0], by state:
// "src-1 failed", "others failed", or a short list.
func others(as []*assessed, state func(*assessed) string) string {
	rest := as[1:]
	if len(rest) == 1 {
		return rest[0].c.label() + " " + state(rest[0])
	}
	first, same := state(rest[0]), true
	for _, a := range rest[1:] {
		same = same && state(a) == first
	}
	if same {
		return "others " + first
	}
	var parts []string
	for _, a := range rest[:min(len(rest), maxNamed)] {
		parts = append(parts, a.c.label()+" "+state(a))
	}
	if len(rest) > maxNamed {
		parts = append(parts, fmt.Sprintf("%d more", len(rest)-maxNamed))
	}
	return strings.Join(parts, ", ")
}

// summary lists a candidate's evidence in a few words.
func summary(a *assessed) string {
	parts := []string{"tests " + testWord[a.tests], changesWord(a)}
	if a.changed {
		parts[1] += fmt.Sprintf(" (+%d -%d lines)", max(a.c.LinesAdded, 0), max(a.c.LinesDeleted, 0))
	}
	parts = append(parts, mergeWord(a), "agent "+agentState(a))
	if a.signals > 0 {
		parts = append(parts, fmt.Sprintf("%d error signals", a.signals))
	}
	if a.c.NotReady != "" {
		parts = append(parts, "not ready ("+a.c.NotReady+")")
	}
	return strings.Join(parts, ", ")
}

// weaknesses lists what holds a candidate's absolute evidence down.
func weaknesses(a *assessed) []string {
	var out []string
	switch a.tests {
	case testsNotRun:
		out = append(out, "no tests ran")
	case testsFailed:
		out = append(out, "its tests failed")
	case testsTimedOut:
		out = append(out, "its tests timed out")
	case testsProveNothing:
		out = append(out, "its tests prove nothing (they pass on the fork point already)")
	}
	if !a.changed {
		out = append(out, "it changed nothing")
	}
	if a.agent == agentFailed {
		out = append(out, "its agent failed")
	}
	if !a.c.MergeClean {
		out = append(out, "it does not merge cleanly")
	}
	if a.c.NotReady != "" {
		out = append(out, "it is not ready ("+a.c.NotReady+")")
	}
	if len(a.penalties) > 0 {
		out = append(out, "its evidence counts against it ("+strings.Join(a.penalties, "; ")+")")
	}
	if len(out) == 0 { // a reason is never empty
		out = append(out, "its own evidence is not strong enough")
	}
	return out
}

// cannotTellBelow is the confidence under which a verdict whose leaders
// differ in nothing but diff size and noise says it cannot tell them
// apart.
const cannotTellBelow = 0.5

// cannotTell says, when the two leading candidates differ in no evidence
// but diff size and error signals and the confidence is low, that the
// judge cannot tell them apart and what would; "" otherwise.
func cannotTell(as []*assessed, conf float64) string {
	if len(as) < 2 || conf >= cannotTellBelow {
		return ""
	}
	w, ru := as[0], as[1]
	if w.tests != ru.tests || w.factor != ru.factor || w.changed != ru.changed {
		return ""
	}
	for f := range numFeatures {
		if f != featSize && f != featSignals && w.g[f] != ru.g[f] {
			return ""
		}
	}
	var would []string
	ev := w.c.Evidence
	if ev == nil || ev.Holdout == nil {
		would = append(would, "a holdout test (--holdout-test or [fork] holdout_command)")
	}
	if ev == nil || ev.Regression == nil {
		would = append(would, "a regression command ([fork] regression_command)")
	}
	if len(would) == 0 {
		would = append(would, "a holdout test that exercises where they differ")
	}
	return fmt.Sprintf("Cannot tell %s from %s: nothing but diff size separates them; %s would.",
		w.c.label(), ru.c.label(), strings.Join(would, " or "))
}

func changesWord(a *assessed) string {
	switch {
	case !a.changed:
		return "changed nothing"
	case a.c.FilesChanged == 1:
		return "changed 1 file"
	}
	return fmt.Sprintf("changed %d files", max(a.c.FilesChanged, 0))
}

func agentState(a *assessed) string {
	switch {
	case a.c.AgentExit != nil && *a.c.AgentExit != 0:
		return fmt.Sprintf("exited %d", *a.c.AgentExit)
	case a.c.PermissionDenials > 0:
		return fmt.Sprintf("was denied %d tool call(s)", a.c.PermissionDenials)
	case a.agent == agentFailed:
		return "reported an error"
	case a.agent == agentUnknown:
		return "status unknown"
	}
	return "finished cleanly"
}

func mergeWord(a *assessed) string {
	if a.c.MergeClean {
		return "merges cleanly"
	}
	return "has merge conflicts"
}

// joinAnd joins names as "a, b and c".
func joinAnd(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
