"""The drafter component: any drafter under the runner's protocol, or a vLLM 0.32 proposer class, checked
for bounds and losslessness."""
