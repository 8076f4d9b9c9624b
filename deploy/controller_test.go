package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/tinehq/tine/kube/v1alpha1"
)

// controllerObjects are what deploy/controller/ makes, decoded strictly.
type controllerObjects struct {
	crds         []apiextensionsv1.CustomResourceDefinition
	accounts     []corev1.ServiceAccount
	roles        []rbacv1.Role
	bindings     []rbacv1.RoleBinding
	deployments  []appsv1.Deployment
	secrets      []corev1.Secret
	unknownKinds []string
}

// buildController runs kustomize over a copy of deploy/controller/, as
// kubectl apply -k deploy/controller/ would.
func buildController(t *testing.T) controllerObjects {
	t.Helper()
	res := kustomize(t, "controller")
	var o controllerObjects
	for _, r := range res.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() {
		case "CustomResourceDefinition":
			err = decode(b, &o.crds)
		case "ServiceAccount":
			err = decode(b, &o.accounts)
		case "Role":
			err = decode(b, &o.roles)
		case "RoleBinding":
			err = decode(b, &o.bindings)
		case "Deployment":
			err = decode(b, &o.deployments)
		case "Secret":
			err = decode(b, &o.secrets)
		default:
			o.unknownKinds = append(o.unknownKinds, r.GetKind())
		}
		if err != nil {
			t.Errorf("%s %s: %v\n%s", r.GetKind(), r.GetName(), err, b)
		}
	}
	return o
}

// kustomize builds the kustomization in from (deploy/ or
// deploy/controller/) as kubectl apply -k would, from a copy of it.
func kustomize(t *testing.T, from string) resmap.ResMap {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, from, dir)
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", from, err)
	}
	return res
}

// copyDir copies the YAML files of from into to, and its example
// environment files (x.env.example) as the real ones (x.env, never
// committed): the generated Secrets' sources.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Type().IsRegular() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".env.example")) {
			b, err := os.ReadFile(filepath.Join(from, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(to, strings.TrimSuffix(e.Name(), ".example")), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestControllerManifests: deploy/controller/ builds into deploy/'s
// namespace; the controller's Deployment runs tine-controller, the
// image's binary deploy/Dockerfile builds, over that namespace as the ServiceAccount the RoleBinding gives the Role,
// unprivileged, its fleet URL from its own generated Secret (not the
// agents' credentials); the Role grants what the controller does to
// TineTasks and nothing else.
func TestControllerManifests(t *testing.T) {
	o := buildController(t)
	if len(o.unknownKinds) > 0 || len(o.crds) != 1 || len(o.accounts) != 1 || len(o.roles) != 1 || len(o.bindings) != 1 ||
		len(o.deployments) != 1 || len(o.secrets) != 1 {
		t.Fatalf("objects: %+v", o)
	}
	ctl := &o.deployments[0]
	if base := build(t); base.namespaces[0].Name != ctl.Namespace {
		t.Errorf("controller in namespace %q, not deploy/'s %q", ctl.Namespace, base.namespaces[0].Name)
	}
	sa, role, rb := o.accounts[0], o.roles[0], o.bindings[0]
	pod := ctl.Spec.Template.Spec
	if pod.ServiceAccountName != sa.Name || ctl.Namespace != "tine" || sa.Namespace != "tine" || role.Namespace != "tine" {
		t.Errorf("controller runs as %q in %q; service account %s/%s, role in %q", pod.ServiceAccountName, ctl.Namespace, sa.Namespace, sa.Name, role.Namespace)
	}
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != role.Name || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Kind != "ServiceAccount" || rb.Subjects[0].Name != sa.Name || rb.Subjects[0].Namespace != sa.Namespace {
		t.Errorf("role binding %+v does not give role %s to %s", rb, role.Name, sa.Name)
	}
	checkRole(t, role)
	c := pod.Containers[0]
	if len(c.Command) != 1 || c.Command[0] != "/usr/local/bin/tine-controller" || !slices.Contains(c.Args, "--namespace=$(POD_NAMESPACE)") {
		t.Errorf("controller's command %v, args %v", c.Command, c.Args)
	}
	if b, err := os.ReadFile("Dockerfile"); err != nil || !strings.Contains(string(b), "./cmd/tine-controller") ||
		!strings.Contains(string(b), "COPY --from=build /out/tine-controller /usr/local/bin/tine-controller\n") {
		t.Errorf("deploy/Dockerfile does not build tine-controller into the image: %v", err)
	}
	if sc := c.SecurityContext; sc == nil || sc.Privileged != nil && *sc.Privileged || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot {
		t.Errorf("controller's security context %+v: want unprivileged, not root", sc)
	}
	if len(c.EnvFrom) != 0 {
		t.Errorf("controller takes the whole Secret (the agents' credentials): %+v", c.EnvFrom)
	}
	secret := o.secrets[0]
	refs := 0
	for _, e := range c.Env {
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			if ref.SecretKeyRef.Name != secret.Name {
				t.Errorf("%s: secret %q, want the generated %q", e.Name, ref.SecretKeyRef.Name, secret.Name)
			}
			if _, ok := secret.Data[ref.SecretKeyRef.Key]; !ok {
				t.Errorf("%s: the Secret has no %s", e.Name, ref.SecretKeyRef.Key)
			}
			refs++
		}
	}
	if refs != 1 || len(secret.Data) != 1 {
		t.Errorf("controller reads %d keys of a Secret of %d; want its fleet URL alone", refs, len(secret.Data))
	}
}

// checkRole: role grants exactly what the controller does: watch
// TineTasks, update them (its finalizer) and their status.
func checkRole(t *testing.T, role rbacv1.Role) {
	t.Helper()
	want := map[string][]string{
		"tinetasks":            {"get", "list", "watch", "update", "patch"},
		"tinetasks/status":     {"get", "update", "patch"},
		"tinetasks/finalizers": {"update"},
	}
	got := map[string][]string{}
	for _, r := range role.Rules {
		if !slices.Equal(r.APIGroups, []string{v1alpha1.GroupVersion.Group}) {
			t.Errorf("role grants API groups %v", r.APIGroups)
		}
		for _, res := range r.Resources {
			got[res] = append(got[res], r.Verbs...)
		}
	}
	for res, verbs := range want {
		if !slices.Equal(got[res], verbs) {
			t.Errorf("role grants %v on %s, want %v", got[res], res, verbs)
		}
		delete(got, res)
	}
	if len(got) > 0 {
		t.Errorf("role grants more: %v", got)
	}
}

// TestControllerManifests_ExampleMatchesTheCRD: the example TineTask
// decodes strictly into kube/v1alpha1's types and passes the CRD's
// OpenAPI schema (the API server's own validator); a bad value does not.
func TestControllerManifests_ExampleMatchesTheCRD(t *testing.T) {
	o := buildController(t)
	if len(o.crds) != 1 {
		t.Fatalf("%d CRDs", len(o.crds))
	}
	var v1schema *apiextensionsv1.JSONSchemaProps
	for _, v := range o.crds[0].Spec.Versions {
		if v.Name == v1alpha1.GroupVersion.Version && v.Served && v.Storage {
			v1schema = v.Schema.OpenAPIV3Schema
		}
	}
	if v1schema == nil {
		t.Fatalf("the CRD serves no %s", v1alpha1.GroupVersion)
	}
	var schema apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v1schema, &schema, nil); err != nil {
		t.Fatal(err)
	}
	validator, _, err := validation.NewSchemaValidator(&schema)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("controller/example-tinetask.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var tt []v1alpha1.TineTask
	if err := decode(b, &tt); err != nil {
		t.Fatalf("example: %v", err)
	}
	var obj map[string]any
	if err := yaml.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	if errs := validation.ValidateCustomResource(field.NewPath(""), obj, validator); len(errs) > 0 {
		t.Errorf("example: %v", errs.ToAggregate())
	}
	obj["spec"].(map[string]any)["budgetUSD"] = "five"
	obj["spec"].(map[string]any)["copies"] = 0
	errs := validation.ValidateCustomResource(field.NewPath(""), obj, validator).ToAggregate()
	if errs == nil || !strings.Contains(errs.Error(), "spec.budgetUSD") || !strings.Contains(errs.Error(), "spec.copies") {
		t.Errorf("bad values passed the schema: %v", errs)
	}
}
