package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util/proto"
	"k8s.io/kube-openapi/pkg/util/proto/validation"
	"sigs.k8s.io/yaml"
)

// kubernetesModule holds the OpenAPI v2 document the manifests are
// validated against, api/openapi-spec/swagger.json: the Kubernetes
// release k8s.io/api v0.36 is cut from. The test downloads it into the
// module cache (go mod download); go.mod does not require it.
const kubernetesModule = "k8s.io/kubernetes@v1.36.3"

// gvkExtension lists, on a model of swagger.json, the group/version/kinds
// it is the schema of.
const gvkExtension = "x-kubernetes-group-version-kind"

// unavailableError: the document could not be had here (no Go module
// proxy, no go command). Outside CI the tests needing it skip.
type unavailableError struct{ reason string }

func (e *unavailableError) Error() string {
	return kubernetesModule + "'s OpenAPI document is unavailable: " + e.reason
}

// loadKubeSchemas parses swagger.json once per test binary.
var loadKubeSchemas = sync.OnceValues(func() (map[schema.GroupVersionKind]proto.Schema, error) {
	p, err := swaggerPath()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	doc, err := openapi_v2.ParseDocument(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	models, err := proto.NewOpenAPIData(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return indexByGVK(models), nil
})

// kubeSchemas returns swagger.json's models by the group/version/kind
// they are the schema of. When the document cannot be downloaded the test
// skips, saying why, unless it runs in CI (CI or TINE_CI set), where it
// fails.
func kubeSchemas(t *testing.T) map[schema.GroupVersionKind]proto.Schema {
	t.Helper()
	index, err := loadKubeSchemas()
	var unavailable *unavailableError
	if errors.As(err, &unavailable) && os.Getenv("CI") == "" && os.Getenv("TINE_CI") == "" {
		t.Skipf("%v (with CI or TINE_CI set, this fails)", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return index
}

// swaggerPath downloads kubernetesModule into the module cache (once per
// machine) and returns the path of its swagger.json.
func swaggerPath() (string, error) {
	dir, err := os.MkdirTemp("", "tine-openapi-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("go", "mod", "download", "-json", kubernetesModule)
	cmd.Dir = dir // outside this module: its go.mod is neither read nor changed
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var mod struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &mod); jerr != nil || mod.Error != "" || mod.Dir == "" {
		reason := mod.Error
		if reason == "" {
			reason = fmt.Sprintf("go mod download: %v: %s", err, strings.TrimSpace(stderr.String()))
		}
		return "", &unavailableError{reason}
	}
	return filepath.Join(mod.Dir, "api", "openapi-spec", "swagger.json"), nil
}

// indexByGVK indexes models by the group/version/kinds their
// x-kubernetes-group-version-kind extension names, as kubectl did.
func indexByGVK(models proto.Models) map[schema.GroupVersionKind]proto.Schema {
	index := map[schema.GroupVersionKind]proto.Schema{}
	for _, name := range models.ListModels() {
		s := models.LookupModel(name)
		list, _ := s.GetExtensions()[gvkExtension].([]any)
		for _, v := range list {
			m, _ := v.(map[any]any)
			group, _ := m["group"].(string)
			version, _ := m["version"].(string)
			kind, _ := m["kind"].(string)
			if version != "" && kind != "" {
				index[schema.GroupVersionKind{Group: group, Version: version, Kind: kind}] = s
			}
		}
	}
	return index
}

// validate checks obj, a manifest's object as JSON decodes it, against
// the model of its apiVersion and kind, as kubectl's client-side
// validation did: no unknown field (matched case-sensitively), every
// value of its field's type, every required field present.
func validate(index map[schema.GroupVersionKind]proto.Schema, obj map[string]any) []error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	s, ok := index[gvk]
	if !ok {
		return []error{fmt.Errorf("%s's OpenAPI document has no schema for %v", kubernetesModule, gvk)}
	}
	return validation.ValidateModel(obj, s, kind)
}

// builtObject is one object kustomize builds from deploy/ or
// deploy/controller/.
type builtObject struct {
	name string // its kustomization, kind and name
	kind string
	yaml []byte
}

// decoded returns a fresh copy of o as JSON decodes it.
func (o builtObject) decoded(t *testing.T) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal(o.yaml, &obj); err != nil {
		t.Fatalf("%s: %v", o.name, err)
	}
	return obj
}

// builtObjects returns every object deploy/ and deploy/controller/ build.
func builtObjects(t *testing.T) []builtObject {
	t.Helper()
	var objs []builtObject
	for _, dir := range []string{".", "controller"} {
		for _, r := range kustomize(t, dir).Resources() {
			b, err := r.AsYAML()
			if err != nil {
				t.Fatal(err)
			}
			name := fmt.Sprintf("%s: %s %s", filepath.Join("deploy", dir), r.GetKind(), r.GetName())
			objs = append(objs, builtObject{name: name, kind: r.GetKind(), yaml: b})
		}
	}
	return objs
}

// TestManifests_MatchKubernetesOpenAPI: every object deploy/ and
// deploy/controller/ build, the TineTask CustomResourceDefinition object
// among them, passes Kubernetes' own OpenAPI v2 schema (kubernetesModule's
// swagger.json), checked as kubectl's client-side validation did; and
// every kind the two build is checked (none is left out unseen).
func TestManifests_MatchKubernetesOpenAPI(t *testing.T) {
	index := kubeSchemas(t)
	seen := map[string]bool{}
	for _, o := range builtObjects(t) {
		for _, err := range validate(index, o.decoded(t)) {
			t.Errorf("%s: %v", o.name, err)
		}
		seen[o.kind] = true
	}
	for _, kind := range []string{"Namespace", "DaemonSet", "Deployment", "Service", "Secret",
		"ServiceAccount", "Role", "RoleBinding", "CustomResourceDefinition"} {
		if !seen[kind] {
			t.Errorf("no %s was validated", kind)
		}
	}
}

// mistake is a change to a built object the validation must report.
type mistake struct {
	what   string
	kind   string               // the kind of the objects changed
	change func(map[string]any) // the change, to one object
	want   string               // in the error reported
	strict bool                 // whether strict decoding refuses it too
	decode func([]byte) error   // strict decoding into k8s.io/api's type
}

// workloadMistakes: an unknown field (a letter's case off), a wrong type
// and a missing required field, in the Deployments and the DaemonSet.
var workloadMistakes = []mistake{
	{"a field's case off", "DaemonSet", func(o map[string]any) {
		pod := dig(o, "spec", "template", "spec")
		pod["nodeselector"] = pod["nodeSelector"]
		delete(pod, "nodeSelector")
	}, `ValidationError(DaemonSet.spec.template.spec): unknown field "nodeselector"`, false, strictly[appsv1.DaemonSet]},
	{"a string for replicas", "Deployment", func(o map[string]any) {
		dig(o, "spec")["replicas"] = "1"
	}, `ValidationError(Deployment.spec.replicas): invalid type`, true, strictly[appsv1.Deployment]},
	{"a container without a name", "Deployment", func(o map[string]any) {
		delete(dig(o, "spec", "template", "spec", "containers", "0"), "name")
	}, `ValidationError(Deployment.spec.template.spec.containers[0]): missing required field "name"`, false, strictly[appsv1.Deployment]},
}

// TestManifests_OpenAPIRefusesMistakes: the validation above bites. Every
// built object with an unknown top-level field is refused (each is checked
// against its kind's model, not an open schema), and each of
// workloadMistakes, made in every object of its kind, is reported at its
// path. Strict decoding into k8s.io/api's types (the other tests' check)
// catches the wrong type only: encoding/json matches field names
// whatever their case, and Go's types require no field. The test checks
// that too, so that what the OpenAPI validation adds stays shown.
func TestManifests_OpenAPIRefusesMistakes(t *testing.T) {
	index := kubeSchemas(t)
	objs := builtObjects(t)
	for _, o := range objs {
		obj := o.decoded(t)
		obj["specification"] = map[string]any{}
		if !reported(validate(index, obj), `unknown field "specification"`) {
			t.Errorf("%s: an unknown field passed", o.name)
		}
	}
	for _, m := range workloadMistakes {
		n := 0
		for _, o := range objs {
			if o.kind == m.kind {
				checkMistake(t, index, o, m)
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no %s built", m.what, m.kind)
		}
	}
}

// checkMistake makes m in o: the validation must report it, and strict
// decoding must refuse it or not as m says.
func checkMistake(t *testing.T, index map[schema.GroupVersionKind]proto.Schema, o builtObject, m mistake) {
	t.Helper()
	obj := o.decoded(t)
	m.change(obj)
	if errs := validate(index, obj); !reported(errs, m.want) {
		t.Errorf("%s with %s: want %q reported, got %v", o.name, m.what, m.want, errs)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.decode(b); (err != nil) != m.strict {
		t.Errorf("%s with %s: strict decoding says %v; want refused: %v", o.name, m.what, err, m.strict)
	}
}

// reported says whether one of errs says want.
func reported(errs []error, want string) bool {
	for _, err := range errs {
		if strings.Contains(err.Error(), want) {
			return true
		}
	}
	return false
}

// strictly decodes b into a T, refusing unknown fields, as the other
// tests decode the manifests.
func strictly[T any](b []byte) error {
	var list []T
	return decode(b, &list)
}

// dig returns the map at path in obj (a number in path indexes a list).
func dig(obj map[string]any, path ...string) map[string]any {
	var v any = obj
	for _, p := range path {
		if l, ok := v.([]any); ok {
			i, _ := strconv.Atoi(p)
			v = l[i]
		} else {
			v = v.(map[string]any)[p]
		}
	}
	return v.(map[string]any)
}
