package kubetest

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

var tinetasks = schema.GroupVersionResource{Group: "tine.dev", Version: "v1alpha1", Resource: "tinetasks"}

// TestCRD_ServerValidates: the real API server, given deploy/'s
// TineTask CRD, stores a good TineTask and refuses, naming the field,
// one its OpenAPI schema or CEL rules refuse; a spec once stored cannot
// change.
func TestCRD_ServerValidates(t *testing.T) {
	cfg := Start(t)
	ApplyCRD(t, cfg, "../../deploy/controller/tine.dev_tinetasks.yaml")
	c := dynamic.NewForConfigOrDie(cfg).Resource(tinetasks).Namespace("default")
	ctx := context.Background()
	good := map[string]any{"repo": "https://git.example/app.git", "prompt": "fix it", "copies": int64(3), "budgetUSD": "2.50"}
	obj, err := c.Create(ctx, task("good", good), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a good TineTask refused: %v", err)
	}
	example := readObject(t, "../../deploy/controller/example-tinetask.yaml")
	example.SetNamespace("default")
	if _, err := c.Create(ctx, example, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Errorf("deploy/controller's example refused: %v", err)
	}
	for _, tc := range []struct {
		name, field string
		spec        map[string]any
	}{
		{"no-repo", "spec.repo", map[string]any{"prompt": "p"}},
		{"no-prompt", "give prompt, command or both", map[string]any{"repo": "r"}},
		{"copies", "spec.copies", map[string]any{"repo": "r", "prompt": "p", "copies": int64(0)}},
		{"budget", "spec.budgetUSD", map[string]any{"repo": "r", "prompt": "p", "budgetUSD": "ten"}},
		{"typo", "spec.promt", map[string]any{"repo": "r", "prompt": "p", "promt": "p"}},
	} {
		_, err := c.Create(ctx, task(tc.name, tc.spec), metav1.CreateOptions{FieldValidation: "Strict"})
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: %v; want refused naming %s", tc.name, err, tc.field)
		}
	}
	unstructured.SetNestedField(obj.Object, "other", "spec", "prompt")
	if _, err := c.Update(ctx, obj, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
		t.Errorf("a changed spec: %v; want refused", err)
	}
}

// readObject reads the object of a YAML file.
func readObject(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}

// task is a TineTask named name with spec.
func task(name string, spec map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "tine.dev/v1alpha1", "kind": "TineTask",
		"metadata": map[string]any{"name": name}, "spec": spec,
	}}
}

// TestGrant_ServerAuthorizes: a Grant's user, acting through As, may do
// in its namespace what its rules say, and the server refuses (403) the
// rest: another namespace, a verb or a subresource no rule names. The
// loopback configuration keeps its full rights.
func TestGrant_ServerAuthorizes(t *testing.T) {
	g := &Grant{User: "system:serviceaccount:ns:reader", Namespace: "ns", Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"tine.dev"}, Resources: []string{"tinetasks"}, Verbs: []string{"get", "list", "create"}},
	}}
	cfg := Start(t, g)
	ApplyCRD(t, cfg, "../../deploy/controller/tine.dev_tinetasks.yaml")
	ctx := context.Background()
	admin := dynamic.NewForConfigOrDie(cfg).Resource(tinetasks)
	as := dynamic.NewForConfigOrDie(As(cfg, g.User)).Resource(tinetasks)
	spec := map[string]any{"repo": "r", "prompt": "p"}
	if _, err := as.Namespace("ns").Create(ctx, task("a", spec), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create, granted: %v", err)
	}
	if _, err := as.Namespace("ns").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("list, granted: %v", err)
	}
	if _, err := as.Namespace("other").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list in another namespace: %v; want forbidden", err)
	}
	if err := as.Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("delete, not granted: %v; want forbidden", err)
	}
	obj, err := admin.Namespace("ns").Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.Namespace("ns").UpdateStatus(ctx, obj, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("update of the status subresource, not granted: %v; want forbidden", err)
	}
	if err := admin.Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Errorf("the loopback client's delete: %v", err)
	}
	want := []string{`list tinetasks.tine.dev in namespace "other"`, `delete tinetasks.tine.dev in namespace "ns"`, `update tinetasks/status.tine.dev in namespace "ns"`}
	if got := g.Denied(); !slices.Equal(got, want) {
		t.Errorf("denied %q; want %q", got, want)
	}
}
