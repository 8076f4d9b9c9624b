package kube

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/kube/v1alpha1"
)

// Options configure Run.
type Options struct {
	// Namespace limits the controller to one namespace's TineTasks (a
	// Role grants it that); "" watches every namespace (a ClusterRole).
	Namespace string
	// HealthAddr is where /healthz and /readyz answer; "" for nowhere.
	HealthAddr string
	// Logger receives the controller's log; nil discards it.
	Logger *slog.Logger
}

// Run runs r against the API server cfg names until ctx ends. It fails
// wrapping tine.ErrNotFound when the server does not serve TineTasks (the
// CustomResourceDefinition is not applied).
func Run(ctx context.Context, cfg *rest.Config, r *Reconciler, o Options) error {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	mo := ctrl.Options{
		Scheme:                 scheme,
		Logger:                 logr.FromSlogHandler(o.Logger.Handler()),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: o.HealthAddr,
	}
	if o.Namespace != "" {
		mo.Cache.DefaultNamespaces = map[string]cache.Config{o.Namespace: {}}
	}
	m, err := ctrl.NewManager(cfg, mo)
	if err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	gvk := v1alpha1.GroupVersion.WithKind("TineTask")
	if _, err := m.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("the API server at %s serves no %s: apply deploy/controller's CustomResourceDefinition: %w", cfg.Host, gvk, tine.ErrNotFound)
		}
		return fmt.Errorf("controller: %s: %w", cfg.Host, err)
	}
	r.Client = m.GetClient()
	if err := r.SetupWithManager(m); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if o.HealthAddr != "" {
		if err := m.AddHealthzCheck("ping", healthz.Ping); err != nil {
			return err
		}
		if err := m.AddReadyzCheck("ping", healthz.Ping); err != nil {
			return err
		}
	}
	return m.Start(ctx)
}
