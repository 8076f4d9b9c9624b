//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/kube"
	"github.com/tinehq/tine/kube/kubetest"
	"github.com/tinehq/tine/kube/v1alpha1"
	"github.com/tinehq/tine/postgres/pgtest"
)

const crdPath = "../../deploy/controller/tine.dev_tinetasks.yaml"

// TestController_TineTask: the real tine-controller against a real API
// server (kubetest) and the fleet's real PostgreSQL, with a real node. It
// refuses to start where the API serves no TineTask (exit 3) or there is
// no API (exit 2), and tine controller says where it went (exit 2). A
// TineTask is submitted once, as a fleet task keyed by its UID: a status
// lost (cleared) is found again, not queued twice. A TineTask deleted
// while its task is queued cancels it and goes; one whose repository does
// not exist is Invalid, saying why. Once a node runs them, each
// TineTask's status says Done, the node, the winner, its patch's summary
// and its commits, with the Finished condition.
func TestController_TineTask(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	// The controller runs as deploy/controller's ServiceAccount, with
	// only what its Role grants, in the Role's namespace, as in a cluster.
	grant := controllerGrant(t)
	cfg := kubetest.Start(t, grant)
	t.Cleanup(func() { // after the controller stops, and after a t.Fatal too
		if d := grant.Denied(); len(d) > 0 {
			t.Errorf("the API server refused the controller what deploy/controller/rbac.yaml's Role does not grant: %q", d)
		}
	})
	kubeconfig := kubetest.Kubeconfig(t, kubetest.As(cfg, grant.User))
	dev := environ("TINE_HOME="+t.TempDir(), "TINE_FLEET_URL="+url)

	if r := runBin(t, dev, controllerBin, "--kubeconfig", kubeconfig); r.code != 3 || !strings.Contains(r.stderr, "serves no tine.dev/v1alpha1, Kind=TineTask") {
		t.Errorf("controller without the CRD: %v; want exit 3 naming it", r)
	}
	if r := runBin(t, dev, controllerBin, "--kubeconfig", filepath.Join(t.TempDir(), "none")); r.code != 2 || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("controller without an API: %v; want exit 2, one line", r)
	}
	if r := runBin(t, dev, tineBin, "controller", "--kubeconfig", kubeconfig); r.code != 2 || !strings.Contains(r.stderr, "run tine-controller") {
		t.Errorf("tine controller: %v; want exit 2 naming tine-controller", r)
	}
	kubetest.ApplyCRD(t, cfg, crdPath)
	startDaemon(t, dev, controllerBin, "--kubeconfig", kubeconfig, "--namespace", ns, "--poll", "200ms")
	c := tineTaskClient(t, cfg)
	ctx := context.Background()
	repo, commit := fleetRepo(t)
	spec := v1alpha1.TineTaskSpec{Repo: repo, Command: agentCmd, Copies: 2}
	for _, name := range []string{"a", "b", "c"} {
		create(t, c, name, spec)
	}
	create(t, c, "bad", v1alpha1.TineTaskSpec{Repo: "/nonexistent/repo", Prompt: "p"})
	bad := waitPhase(t, c, "bad", v1alpha1.PhaseInvalid)
	if !strings.Contains(bad.Status.Message, "/nonexistent/repo") {
		t.Errorf("invalid TineTask's message: %q", bad.Status.Message)
	}
	a, b, cc := waitPhase(t, c, "a", v1alpha1.PhaseQueued), waitPhase(t, c, "b", v1alpha1.PhaseQueued), waitPhase(t, c, "c", v1alpha1.PhaseQueued)
	if a.Status.Commit != commit || a.Status.TaskID == b.Status.TaskID {
		t.Errorf("queued: commit %s (want %s), tasks %s %s", a.Status.Commit, commit, a.Status.TaskID, b.Status.TaskID)
	}
	if r := runBin(t, dev, tineBin, "tasks", "--json"); r.code != 0 || !strings.Contains(r.stdout, `"submitted_by": "TineTask `+ns+`/a"`) {
		t.Errorf("tine tasks does not name the TineTask that submitted: %v", r)
	}
	checkResubmit(t, c, cc)
	checkDelete(t, c, url, b)

	startNode(t, url, "k1", "--capacity", "2")
	for _, name := range []string{"a", "c"} {
		done := waitPhase(t, c, name, v1alpha1.PhaseDone)
		st := done.Status
		if st.Node != "k1" || st.Winner == "" || st.Patch == nil || st.Patch.Files < 2 || len(st.Patch.Commits) != 1 ||
			st.StartedAt == nil || st.FinishedAt == nil {
			t.Errorf("%s done: %+v, patch %+v", name, st, st.Patch)
		}
		if f := findCondition(st.Conditions, v1alpha1.ConditionFinished); f == nil || f.Status != metav1.ConditionTrue || f.Reason != v1alpha1.PhaseDone {
			t.Errorf("%s: Finished condition %+v", name, f)
		}
	}
	f, err := fleet.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tasks, err := f.Tasks(ctx)
	if err != nil || len(tasks) != 3 {
		t.Fatalf("fleet tasks: %d, %v; want 3 (a, b canceled, c once)", len(tasks), err)
	}
}

// ns is the namespace deploy/controller/ runs the controller in.
const ns = "tine"

// controllerGrant is what deploy/controller/rbac.yaml grants the
// controller: its Role's rules, for the ServiceAccount its RoleBinding
// names, in the Role's namespace.
func controllerGrant(t *testing.T) *kubetest.Grant {
	t.Helper()
	b, err := os.ReadFile("../../deploy/controller/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			t.Fatal(err)
		}
		switch kind.Kind {
		case "Role":
			err = yaml.UnmarshalStrict([]byte(doc), &role)
		case "RoleBinding":
			err = yaml.UnmarshalStrict([]byte(doc), &binding)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(binding.Subjects) != 1 || binding.RoleRef.Name != role.Name || role.Namespace != ns || binding.Subjects[0].Kind != "ServiceAccount" {
		t.Fatalf("rbac.yaml: Role %s/%s, RoleBinding of %s to %+v; want one ServiceAccount bound to the Role in %s", role.Namespace, role.Name, binding.RoleRef.Name, binding.Subjects, ns)
	}
	sa := binding.Subjects[0]
	return &kubetest.Grant{User: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name, Namespace: role.Namespace, Rules: role.Rules}
}

// checkResubmit clears TineTask tt's status, as a status write lost
// before the controller restarted would leave it: the controller submits
// again, with the same key, and finds the same task.
func checkResubmit(t *testing.T, c client.Client, tt *v1alpha1.TineTask) {
	t.Helper()
	id := tt.Status.TaskID
	tt.Status = v1alpha1.TineTaskStatus{}
	if err := c.Status().Update(context.Background(), tt); err != nil {
		t.Fatal(err)
	}
	got := waitPhase(t, c, tt.Name, v1alpha1.PhaseQueued)
	if got.Status.TaskID != id {
		t.Errorf("resubmitted TineTask %s: task %s, want the same %s", tt.Name, got.Status.TaskID, id)
	}
}

// checkDelete deletes queued TineTask tt: its task is canceled and the
// object goes.
func checkDelete(t *testing.T, c client.Client, url string, tt *v1alpha1.TineTask) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, tt); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Get(ctx, client.ObjectKeyFromObject(tt), &v1alpha1.TineTask{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("TineTask %s not gone after its delete: %v", tt.Name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	f, err := fleet.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := f.Task(ctx, tt.Status.TaskID)
	if err != nil || tk.State != fleet.TaskCanceled || !strings.Contains(tk.Reason, "TineTask "+ns+"/"+tt.Name+" deleted") {
		t.Errorf("task of the deleted TineTask: %+v, %v; want canceled", tk, err)
	}
}

// tineTaskClient is a client of TineTasks.
func tineTaskClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// create creates TineTask name in namespace ns.
func create(t *testing.T, c client.Client, name string, spec v1alpha1.TineTaskSpec) {
	t.Helper()
	tt := &v1alpha1.TineTask{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := c.Create(context.Background(), tt); err != nil {
		t.Fatal(err)
	}
}

// waitPhase waits until TineTask name's status is in phase, with the
// controller's finalizer, and returns it.
func waitPhase(t *testing.T, c client.Client, name, phase string) *v1alpha1.TineTask {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var tt v1alpha1.TineTask
		err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &tt)
		if err == nil && tt.Status.Phase == phase && len(tt.Finalizers) == 1 && tt.Finalizers[0] == kube.Finalizer {
			return &tt
		}
		if time.Now().After(deadline) {
			t.Fatalf("TineTask %s: %v, status %+v, finalizers %v; want phase %s", name, err, tt.Status, tt.Finalizers, phase)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// findCondition is conds' condition of type typ; nil when none.
func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}
