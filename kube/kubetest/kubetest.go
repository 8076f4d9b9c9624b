// Package kubetest starts a real Kubernetes API server inside a test:
// the apiextensions-apiserver (the part of kube-apiserver that serves
// CustomResourceDefinitions and their objects: OpenAPI validation, CEL
// rules, the status subresource, finalizers, watches) on an embedded etcd,
// both from Kubernetes' and etcd's own Go modules. It serves no built-in
// groups (pods, RBAC): a controller of custom resources is what it tests.
package kubetest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiserver "k8s.io/apiextensions-apiserver/pkg/cmd/server/testing"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// Start starts an API server on an embedded etcd, both stopped when t
// ends, and returns a configuration with full rights to it.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	// As Kubernetes' own tests of it run it: the delegated authentication
	// and authorization (a kube-apiserver's TokenReview and
	// SubjectAccessReview) and the admission plugins that ask a
	// kube-apiserver are off; the loopback client, with full rights, is
	// what the tests use.
	none := filepath.Join(t.TempDir(), "none.kubeconfig")
	if err := os.WriteFile(none, []byte(noKubeAPI), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := apiserver.StartTestServer(t, nil, []string{
		"--etcd-servers", strings.Join(etcd.Endpoints(), ","),
		"--authentication-skip-lookup",
		"--authentication-kubeconfig", none,
		"--authorization-kubeconfig", none,
		"--kubeconfig", none,
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
	}, nil)
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	t.Cleanup(s.TearDownFn)
	return rest.CopyConfig(s.ClientConfig)
}

// noKubeAPI is a kubeconfig naming no server that answers, for the
// delegations a lone apiextensions-apiserver would make to a
// kube-apiserver.
const noKubeAPI = `apiVersion: v1
kind: Config
clusters:
- cluster:
    server: http://127.0.0.1:1
  name: none
contexts:
- context:
    cluster: none
    user: none
  name: none
current-context: none
users:
- name: none
  user:
    token: none
`

// ApplyCRD creates the CustomResourceDefinition in the YAML file path
// and waits until the server serves it.
func ApplyCRD(t testing.TB, cfg *rest.Config, path string) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c := apiextensionsclient.NewForConfigOrDie(cfg).ApiextensionsV1().CustomResourceDefinitions()
	ctx := context.Background()
	if _, err := c.Create(ctx, &crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating %s: %v", crd.Name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := c.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range got.Status.Conditions {
			if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
				return got
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not established: %+v", crd.Name, got.Status.Conditions)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kubeconfig writes cfg as a kubeconfig file in a temporary directory,
// for a program run by the test, and returns its path.
func Kubeconfig(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
