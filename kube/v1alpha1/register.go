package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of TineTask.
var GroupVersion = schema.GroupVersion{Group: "tine.dev", Version: "v1alpha1"}

// SchemeBuilder registers the group's types with a scheme.
var SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme adds the group's types to a scheme.
var AddToScheme = SchemeBuilder.AddToScheme

// addKnownTypes adds TineTask and TineTaskList to s.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TineTask{}, &TineTaskList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
