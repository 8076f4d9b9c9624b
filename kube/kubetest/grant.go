package kubetest

import (
	"context"
	"fmt"
	"path"
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/rest"
	"k8s.io/component-helpers/auth/rbac/validation"
)

// Grant is what a Role bound to User in Namespace lets them do: the API
// server Start runs authorizes User's requests by it, with Kubernetes'
// own comparison of RBAC rules (component-helpers' Covers), and refuses
// everything else they ask (403), as a cluster with RBAC would. Requests
// by others are left to the server's own authorizers (its loopback
// client may do anything).
type Grant struct {
	User      string
	Namespace string
	Rules     []rbacv1.PolicyRule

	mu     sync.Mutex
	denied []string
}

// discovery are the paths every authenticated user may read in a
// cluster (the system:discovery and system:public-info-viewer roles).
var discovery = []rbacv1.PolicyRule{{
	Verbs:           []string{"get"},
	NonResourceURLs: []string{"/api", "/api/*", "/apis", "/apis/*", "/openapi", "/openapi/*", "/version", "/version/", "/healthz", "/livez", "/readyz"},
}}

// Denied are the requests of User the grant refused, each once, as
// "verb resource/subresource.group in namespace" (or "verb path").
func (g *Grant) Denied() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.denied...)
}

// Authorize implements authorizer.Authorizer.
func (g *Grant) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser() == nil || a.GetUser().GetName() != g.User {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if !a.IsResourceRequest() {
		rule := rbacv1.PolicyRule{Verbs: []string{a.GetVerb()}, NonResourceURLs: []string{a.GetPath()}}
		if ok, _ := validation.Covers(discovery, []rbacv1.PolicyRule{rule}); ok {
			return authorizer.DecisionAllow, "", nil
		}
		return g.deny(a.GetVerb()+" "+a.GetPath(), "not a discovery path")
	}
	resource := a.GetResource()
	if a.GetSubresource() != "" {
		resource = path.Join(resource, a.GetSubresource())
	}
	what := fmt.Sprintf("%s %s.%s in namespace %q", a.GetVerb(), resource, a.GetAPIGroup(), a.GetNamespace())
	if a.GetNamespace() != g.Namespace {
		return g.deny(what, "the Role is in namespace "+g.Namespace)
	}
	rule := rbacv1.PolicyRule{Verbs: []string{a.GetVerb()}, APIGroups: []string{a.GetAPIGroup()}, Resources: []string{resource}}
	if a.GetName() != "" {
		rule.ResourceNames = []string{a.GetName()}
	}
	if ok, _ := validation.Covers(g.Rules, []rbacv1.PolicyRule{rule}); !ok {
		return g.deny(what, "no rule of the Role allows it")
	}
	return authorizer.DecisionAllow, "", nil
}

func (g *Grant) deny(what, why string) (authorizer.Decision, string, error) {
	g.mu.Lock()
	if !slices.Contains(g.denied, what) {
		g.denied = append(g.denied, what)
	}
	g.mu.Unlock()
	return authorizer.DecisionDeny, why, nil
}

// As is cfg acting as user (impersonation, which the loopback client may
// do): its requests are authorized as user's.
func As(cfg *rest.Config, user string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: user}
	return c
}
