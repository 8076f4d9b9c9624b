// Package deploy holds tine's Kubernetes manifests (kustomize); its test
// builds them as `kubectl apply -k deploy/` would and checks every object
// against the Kubernetes API's types.
package deploy

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// objects are the manifests as kustomize builds them, decoded strictly:
// a field the API's types do not have (a typo, a field at the wrong
// level) fails the decoding, as the API server's schema would refuse it.
type objects struct {
	namespaces  []corev1.Namespace
	daemonSets  []appsv1.DaemonSet
	deployments []appsv1.Deployment
	services    []corev1.Service
	secrets     []corev1.Secret
}

// build runs kustomize over a copy of this directory, with the example
// environment file as tine.env (the Secret's source, never committed).
func build(t *testing.T) objects {
	t.Helper()
	res := kustomize(t, ".")
	var out objects
	for _, r := range res.Resources() {
		b, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var err2 error
		switch r.GetKind() {
		case "Namespace":
			err2 = decode(b, &out.namespaces)
		case "DaemonSet":
			err2 = decode(b, &out.daemonSets)
		case "Deployment":
			err2 = decode(b, &out.deployments)
		case "Service":
			err2 = decode(b, &out.services)
		case "Secret":
			err2 = decode(b, &out.secrets)
		default:
			t.Errorf("%s %s: a kind this test does not check", r.GetKind(), r.GetName())
		}
		if err2 != nil {
			t.Errorf("%s %s: %v\n%s", r.GetKind(), r.GetName(), err2, b)
		}
	}
	return out
}

// decode appends the object in b to list, refusing unknown fields.
func decode[T any](b []byte, list *[]T) error {
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

func TestManifests_BuildAndMatchTheAPI(t *testing.T) {
	o := build(t)
	if len(o.namespaces) != 1 || len(o.daemonSets) != 1 || len(o.deployments) != 1 || len(o.services) != 1 || len(o.secrets) != 1 {
		t.Fatalf("objects: %d namespaces, %d daemon sets, %d deployments, %d services, %d secrets; want one of each",
			len(o.namespaces), len(o.daemonSets), len(o.deployments), len(o.services), len(o.secrets))
	}
	secret := o.secrets[0].Name
	for _, w := range []struct {
		name     string
		ns       string
		selector map[string]string
		pod      corev1.PodTemplateSpec
	}{
		{o.daemonSets[0].Name, o.daemonSets[0].Namespace, o.daemonSets[0].Spec.Selector.MatchLabels, o.daemonSets[0].Spec.Template},
		{o.deployments[0].Name, o.deployments[0].Namespace, o.deployments[0].Spec.Selector.MatchLabels, o.deployments[0].Spec.Template},
	} {
		if w.ns != o.namespaces[0].Name {
			t.Errorf("%s: namespace %q, want %q", w.name, w.ns, o.namespaces[0].Name)
		}
		if !matches(w.selector, w.pod.Labels) {
			t.Errorf("%s: selector %v does not select its pods %v", w.name, w.selector, w.pod.Labels)
		}
		for _, c := range w.pod.Spec.Containers {
			if !strings.HasPrefix(c.Image, "ghcr.io/tinehq/tine:") {
				t.Errorf("%s/%s: image %q, want kustomize's ghcr.io/tinehq/tine", w.name, c.Name, c.Image)
			}
			refs := 0
			for _, f := range c.EnvFrom {
				if f.SecretRef != nil {
					refs++
					if f.SecretRef.Name != secret {
						t.Errorf("%s/%s: secret %q, want the generated %q", w.name, c.Name, f.SecretRef.Name, secret)
					}
				}
			}
			if refs != 1 {
				t.Errorf("%s/%s: %d secret references, want the credentials' one", w.name, c.Name, refs)
			}
		}
	}
	node := o.daemonSets[0].Spec.Template.Spec
	if node.NodeSelector["tine.dev/node"] != "true" {
		t.Errorf("tine-node runs on every machine: nodeSelector %v", node.NodeSelector)
	}
	if c := node.Containers[0]; c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("tine-node is not privileged: its forks need mounts, namespaces and cgroups")
	}
	api := o.deployments[0].Spec.Template.Spec
	for _, c := range api.Containers {
		if c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			t.Errorf("tine-api/%s is privileged: it runs no forks", c.Name)
		}
		if !slices.Contains(c.Args, "--capacity=0") {
			t.Errorf("tine-api/%s takes tasks: args %v", c.Name, c.Args)
		}
	}
	svc := o.services[0]
	if !matches(svc.Spec.Selector, o.deployments[0].Spec.Template.Labels) {
		t.Errorf("service %s selects %v, not tine-api's pods %v", svc.Name, svc.Spec.Selector, o.deployments[0].Spec.Template.Labels)
	}
	for _, p := range svc.Spec.Ports {
		if p.TargetPort.StrVal != "" && !hasPort(api.Containers, p.TargetPort.StrVal) {
			t.Errorf("service %s: target port %q is no port of tine-api", svc.Name, p.TargetPort.StrVal)
		}
	}
}

// TestManifests_StrictDecodingRefusesATypo: the check above can fail: a
// field misspelt in a manifest is refused.
func TestManifests_StrictDecodingRefusesATypo(t *testing.T) {
	b, err := os.ReadFile("node-daemonset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(b, []byte("nodeSelector:"), []byte("nodeSelecter:"), 1)
	var ds []appsv1.DaemonSet
	if err := decode(bad, &ds); err == nil || !strings.Contains(err.Error(), "nodeSelecter") {
		t.Errorf("a misspelt field decoded: %v", err)
	}
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func hasPort(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}
