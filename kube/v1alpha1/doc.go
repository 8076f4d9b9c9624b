// Package v1alpha1 is the tine.dev/v1alpha1 API group: the TineTask custom
// resource, a fork-run task of a fleet declared as a Kubernetes object.
//
// +kubebuilder:object:generate=true
// +groupName=tine.dev
package v1alpha1

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.21.0 object paths=. crd:crdVersions=v1 output:crd:dir=../../deploy/controller
