"""What several plugins share, each in one place (kube keeps framework/plugins/helper):

- nodeselector: node selector terms parsed as kube parses them, as node masks and on one node
  (NodeAffinity, VolumeBinding);
- shape: the broken-linear scoring shape (RequestedToCapacityRatio, StorageCapacityScoring);
- resourcescoring: resource-allocation scoring (NodeResourcesFit, NodeResourcesBalancedAllocation);
- volumes: the storage index and the claim hint the volume plugins share; attachedvolumes:
  per-node attached CSI volume counts kept between cycles (NodeVolumeLimits);
- preemption: kube's preemption evaluator's shared parts, the importance order of pods, candidates
  and the choice among them, trial removals (DefaultPreemption, CapacityScheduling, group
  preemption); preemptionexecutor: deleting the victims in the background, holding the
  preemptor at PreEnqueue meanwhile;
- args: checks shared by plugin args; hints: what queueing hints share.

Nothing is imported here, so importing one helper does not import them all."""
