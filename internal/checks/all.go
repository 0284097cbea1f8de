package checks

import "github.com/hybridctl/hybridctl/internal/snapshot"

// All returns every check, in the order they run and are reported. This is
// the one list; a new check is one entry here, one in catalogue.yaml, a
// function in the file of its area, and its fixtures.
func All() []Check {
	K := func(ks ...snapshot.Kind) []snapshot.Kind { return ks }
	wl := func(extra ...snapshot.Kind) []snapshot.Kind { return append(snapshot.WorkloadKinds(), extra...) }
	return []Check{
		// Workloads.
		{ID: "HC101", Needs: wl(), Uses: K(snapshot.KindNode, snapshot.KindRuntimeClass), Run: linuxOnWindows(true)},
		{ID: "HC102", Needs: wl(), Uses: K(snapshot.KindNode, snapshot.KindRuntimeClass), Run: linuxOnWindows(false)},
		{ID: "HC103", Needs: wl(), Uses: K(snapshot.KindRuntimeClass), Run: windowsPodOSField},
		{ID: "HC104", Needs: wl(), Uses: K(snapshot.KindRuntimeClass, snapshot.KindNode, snapshot.KindPod), Run: windowsPodBuildSelector},
		{ID: "HC105", Needs: wl(snapshot.KindRuntimeClass), Run: runtimeClassMissing},
		{ID: "HC106", Needs: K(snapshot.KindRuntimeClass, snapshot.KindNode), Run: runtimeClassBuildUnmatched},
		{ID: "HC107", Needs: K(snapshot.KindRuntimeClass, snapshot.KindNode), Run: windowsBuildNoRuntimeClass},
		{ID: "HC108", Needs: wl(), Uses: K(snapshot.KindNode, snapshot.KindRuntimeClass), Run: windowsImageBuild},
		{ID: "HC109", Needs: wl(snapshot.KindService), Uses: K(snapshot.KindConfigMap, snapshot.KindRuntimeClass), Run: windowsDottedServiceName},
		{ID: "HC110", Needs: wl(), Uses: K(snapshot.KindRuntimeClass), Run: windowsLinuxSecurityContext},
		{ID: "HC111", Needs: wl(snapshot.KindNamespace), Run: hostProcessPodSecurity},
		{ID: "HC112", Needs: wl(), Uses: K(snapshot.KindNode, snapshot.KindRuntimeClass), Run: windowsTaintNotTolerated},
		{ID: "HC113", Needs: wl(), Uses: K(snapshot.KindNode, snapshot.KindRuntimeClass), Run: windowsImageNoPlacement},
		{ID: "HC114", Needs: wl(), Uses: K(snapshot.KindNode), Run: windowsBuildPinUnmatched},
		// Nodes.
		{ID: "HC201", Needs: K(snapshot.KindNode), Run: windowsNodeTaint},
		{ID: "HC202", Needs: K(snapshot.KindNode), Uses: K(snapshot.KindIPPool, snapshot.KindInstallation), Run: windowsMaxPods},
		{ID: "HC203", Needs: K(snapshot.KindNode), Uses: K(snapshot.KindPod), Run: nodeNetworkNotReady},
		{ID: "HC204", Needs: K(snapshot.KindCSR), Uses: K(snapshot.KindNode), Run: kubeletServingCSRPending},
		{ID: "HC205", Needs: K(snapshot.KindNode), Uses: K(snapshot.KindClusterConfiguration), Run: kubeletVersionSkew},
		{ID: "HC206", Needs: K(snapshot.KindNode), Run: linuxWorkersForWindows},
		{ID: "HC207", Needs: K(snapshot.KindPod), Uses: K(snapshot.KindDeployment), Run: corednsSingleNode},
		{ID: "HC208", Needs: K(snapshot.KindPod), Uses: wl(snapshot.KindNode), Run: imagePullFailed},
		{ID: "HC209", Needs: K(snapshot.KindNode), NeedsSpec: true, Run: specNodeNotJoined},
		// Calico.
		{ID: "HC301", Needs: K(snapshot.KindInstallation, snapshot.KindNode), Run: calicoWindowsDataplane},
		{ID: "HC302", Needs: K(snapshot.KindInstallation), Uses: K(snapshot.KindNode), Run: calicoBGP},
		{ID: "HC303", Needs: K(snapshot.KindInstallation, snapshot.KindIPPool), Uses: K(snapshot.KindNode), Run: calicoIPPoolEncapsulation},
		{ID: "HC304", Needs: K(snapshot.KindInstallation), Uses: K(snapshot.KindClusterConfiguration, snapshot.KindNode), Run: calicoServiceCIDRs},
		{ID: "HC305", Needs: K(snapshot.KindConfigMap), Uses: K(snapshot.KindInstallation, snapshot.KindClusterConfiguration, snapshot.KindNode), Run: calicoServicesEndpoint},
		{ID: "HC306", Needs: K(snapshot.KindIPAMConfiguration), Uses: K(snapshot.KindInstallation, snapshot.KindNode), Run: calicoStrictAffinity},
		{ID: "HC307", Needs: K(snapshot.KindTigeraStatus), Run: calicoTigeraStatus},
		{ID: "HC308", Needs: K(snapshot.KindFelixConfiguration), Uses: K(snapshot.KindNode, snapshot.KindInstallation), Run: calicoVXLANVNIPort},
		// Add-ons.
		{ID: "HC401", Needs: K(snapshot.KindNode, snapshot.KindDaemonSet), Uses: K(snapshot.KindClusterConfiguration, snapshot.KindRuntimeClass), Run: kubeProxyWindows},
		{ID: "HC402", Needs: K(snapshot.KindDaemonSet), Uses: K(snapshot.KindPod), Run: calicoNodeWindowsReady},
	}
}
