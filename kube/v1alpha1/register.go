package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of TineTask.
var GroupVersion = schema.GroupVersion{Group: "tine.dev", Version: "v1alpha1"}

// SchemeBuilder registers the group's types with a scheme.
var SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

// AddToScheme adds the group's types to a scheme.
var AddToScheme = SchemeBuilder.AddToScheme

func init() {
	SchemeBuilder.Register(&TineTask{}, &TineTaskList{})
}
