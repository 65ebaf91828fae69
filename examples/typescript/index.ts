// A TypeScript program using the gpu-cluster package. From this folder: `pulumi package add ../..` generates
// the SDK into sdks/gpu-cluster (tools/multilang/check generates it there and type-checks this file with it).
import * as pulumi from "@pulumi/pulumi";
import * as gpu from "@pulumi/gpu-cluster";

// readme: begin
const config = new pulumi.Config();
// Outputs as inputs: an existing VPC's ids (here from pulumi.output; often another stack's or resource's
// outputs) and an SSH key kept as a secret in the stack's config.
const vpcId = pulumi.output("vpc-0123456789abcdef0");
const subnetId = pulumi.output("subnet-0123456789abcdef0");

const cluster = new gpu.GpuCluster("train", {
    cloud: gpu.Cloud.Aws,
    region: "us-east-1",
    zone: "us-east-1a",
    gpu: "H100:8",
    nodes: 2,
    fabric: gpu.Fabric.Required,
    scheduler: gpu.Scheduler.Slurm,
    network: { existing: { vpcId: vpcId, subnetIds: [subnetId] } },
    sshPublicKey: config.requireSecret("sshPublicKey"),
    tags: { team: "ml" },
});

// Typed outputs: objects with named fields, not maps.
export const login = cluster.access.command;
export const listNodes = cluster.access.nodes;
export const partition = cluster.slurm.apply((slurm) => slurm?.partition);
export const identity = cluster.identity.name;
export const fabricGbpsPerNode = cluster.fabricGbpsPerNode;
// readme: end
