// Package kube adapts a fleet to Kubernetes: a controller
// (controller-runtime) that submits each TineTask custom resource
// (package v1alpha1) as a fleet task and reports the task in its status.
package kube
