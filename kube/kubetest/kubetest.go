// Package kubetest starts a real Kubernetes API server inside a test:
// the apiextensions-apiserver (the part of kube-apiserver that serves
// CustomResourceDefinitions and their objects: OpenAPI validation, CEL
// rules, the status subresource, finalizers, watches) on an embedded etcd,
// both from Kubernetes' and etcd's own Go modules. It serves no built-in
// groups (pods, RBAC): a controller of custom resources is what it tests.
package kubetest

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extensionsapiserver "k8s.io/apiextensions-apiserver/pkg/apiserver"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/storage/etcd3/testserver"
	"k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	basecompatibility "k8s.io/component-base/compatibility"
	"sigs.k8s.io/yaml"
)

// Start starts an API server on an embedded etcd, both stopped when t
// ends, and returns a configuration with full rights to it. Each grant's
// user is authorized by its rules alone (As makes a configuration that
// acts as them).
//
// It is the apiextensions-apiserver set up as Kubernetes' own tests of it
// set it up (its package testing's StartTestServer), with one change: it
// lists its API groups at /apis itself (discovery on), as kube-apiserver's
// aggregator does in a cluster, so that clients (controller-runtime's
// REST mapper) find the custom resources' groups.
func Start(t testing.TB, grants ...*Grant) *rest.Config {
	t.Helper()
	etcd := testserver.RunEtcd(t, nil)
	s := options.NewCustomResourceDefinitionsServerOptions(io.Discard, io.Discard)
	fg := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	version := compatibility.DefaultKubeEffectiveVersionForTest()
	version.SetEmulationVersion(fg.EmulationVersion())
	globals := basecompatibility.NewComponentGlobalsRegistry()
	if err := globals.Register(basecompatibility.DefaultKubeComponent, version, fg); err != nil {
		t.Fatal(err)
	}
	s.ServerRunOptions.ComponentGlobalsRegistry = globals
	fs := pflag.NewFlagSet("kubetest", pflag.ContinueOnError)
	s.AddFlags(fs)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serving := s.RecommendedOptions.SecureServing
	serving.Listener, serving.BindPort = ln, ln.Addr().(*net.TCPAddr).Port
	serving.ServerCert.CertDirectory, serving.ExternalAddress = t.TempDir(), net.IPv4(127, 0, 0, 1)
	if err := s.APIEnablement.RuntimeConfig.Set("api/all=true"); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse(flags(t, etcd.Endpoints())); err != nil {
		t.Fatal(err)
	}
	if err := globals.Set(); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Config()
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) > 0 {
		var az []authorizer.Authorizer
		for _, g := range grants {
			az = append(az, g)
		}
		cfg.GenericConfig.Authorization.Authorizer = union.New(append(az, cfg.GenericConfig.Authorization.Authorizer)...)
	}
	defs := openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions)
	cfg.GenericConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(defs, openapinamer.NewDefinitionNamer(extensionsapiserver.Scheme))
	completed := cfg.Complete()
	completed.GenericConfig.EnableDiscovery = true
	server, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		t.Fatalf("starting the API server: %v", err)
	}
	run(t, server.GenericAPIServer)
	return rest.CopyConfig(server.GenericAPIServer.LoopbackClientConfig)
}

// flags are the API server's command line: etcd at endpoints, and, as
// Kubernetes' own tests of it run it, the delegated authentication and
// authorization (a kube-apiserver's TokenReview and SubjectAccessReview)
// and the admission plugins that ask a kube-apiserver off; the loopback
// client, with full rights, is what the tests use.
func flags(t testing.TB, endpoints []string) []string {
	none := filepath.Join(t.TempDir(), "none.kubeconfig")
	if err := os.WriteFile(none, []byte(noKubeAPI), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"--etcd-servers", strings.Join(endpoints, ","),
		"--authentication-skip-lookup",
		"--authentication-kubeconfig", none,
		"--authorization-kubeconfig", none,
		"--kubeconfig", none,
		"--enable-priority-and-fairness=false",
		"--disable-admission-plugins", "NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ValidatingAdmissionPolicy,MutatingAdmissionPolicy",
	}
}

// run serves s until t ends, and waits until it is healthy.
func run(t testing.TB, s *genericapiserver.GenericAPIServer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.PrepareRun().RunWithContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Logf("API server: %v", err)
		}
	})
	c, err := rest.RESTClientFor(withCodec(s.LoopbackClientConfig))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case err := <-done:
			t.Fatalf("API server stopped: %v", err)
		default:
		}
		var code int
		c.Get().AbsPath("/healthz").Do(ctx).StatusCode(&code)
		if code == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("API server not healthy after a minute (%d)", code)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// withCodec is cfg with what a REST client of plain paths needs.
func withCodec(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c.GroupVersion = &schema.GroupVersion{Version: "v1"}
	c.APIPath = "/"
	return c
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
	kc.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Impersonate: cfg.Impersonate.UserName}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	kc.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}
