package layout

import "testing"

// The names are the on-disk format: state directories made by earlier
// versions must still be found. Each path here is written out in full, not
// built the way the package builds it.
func TestLayout_Names(t *testing.T) {
	l := New("/h")
	ws := l.Workspace("w")
	r := l.Run("w", "r")
	g := l.Group("w", "g")
	for _, c := range []struct{ got, want string }{
		{l.Root(), "/h"},
		{l.Store(), "/h/tine.db"},
		{l.StoreID(), "/h/store-id"},
		{l.Quarantine(), "/h/quarantine"},
		{l.Probes(), "/h/probes.json"},
		{l.History(), "/h/history.jsonl"},
		{l.Token(), "/h/token"},
		{l.Socket(), "/h/ctl/tine.sock"},
		{l.WorkspacesLock(), "/h/workspaces.lock"},
		{ws.Lock(), "/h/workspaces/w.lock"},
		{ws.Record(), "/h/workspaces/w/workspace.json"},
		{ws.Version("v"), "/h/workspaces/w/versions/v.json"},
		{ws.Discarded("r"), "/h/workspaces/w/discarded/r.json"},
		{ws.ManifestLock(), "/h/workspaces/w/manifest.lock"},
		{ws.JudgeWeights(), "/h/workspaces/w/judge-weights.json"},
		{ws.InitJournal(), "/h/workspaces/w/init.json"},
		{ws.ReleaseJournal(), "/h/workspaces/w/release.json"},
		{ws.ReleasePending(), "/h/workspaces/w/release/pending"},
		{ws.Layer("l"), "/h/workspaces/w/layers/l"},
		{r.Record(), "/h/workspaces/w/runs/r/run.json"},
		{r.Base(), "/h/workspaces/w/runs/r/base"},
		{r.View(), "/h/workspaces/w/runs/r/view"},
		{r.MergeJournal(), "/h/workspaces/w/runs/r/merge.json"},
		{r.SealJournal(), "/h/workspaces/w/runs/r/seal.json"},
		{r.Sessions(), "/h/workspaces/w/runs/r/sessions"},
		{r.Adopted(), "/h/workspaces/w/runs/r/sup/adopted.json"},
		{r.Log("web"), "/h/workspaces/w/runs/r/logs/web.log"},
		{r.CapToken(), "/h/workspaces/w/runs/r/cap/token"},
		{r.Socket(), "/h/workspaces/w/runs/r/cap/tine.sock"},
		{r.Scratch(), "/h/workspaces/w/runs/r/scratch"},
		{r.Home(), "/h/workspaces/w/runs/r/home"},
		{r.Cell(), "/h/workspaces/w/runs/r/cell.json"},
		{r.Turn(), "/h/workspaces/w/runs/r/turn"},
		{r.QueuedForks(), "/h/workspaces/w/runs/r/queued-forks.json"},
		{g.Record(), "/h/workspaces/w/groups/g/group.json"},
		{g.Report(), "/h/workspaces/w/groups/g/report.json"},
		{g.Summary(), "/h/workspaces/w/groups/g/summary.json"},
		{g.Resolution(), "/h/workspaces/w/groups/g/resolution.json"},
		{g.AgentLog("r"), "/h/workspaces/w/groups/g/r.agent.log"},
		{g.TestLog("r"), "/h/workspaces/w/groups/g/r.test.log"},
		{WorkspaceAt("/x").Runs(), "/x/runs"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
