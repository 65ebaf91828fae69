// A Go program using the gpu-cluster package. From this folder: `pulumi package add ../..` generates the SDK
// (tools/multilang/check generates it into sdks/gpu-cluster, which go.mod replaces, and builds and vets this file).
package main

import (
	gpu "example.com/pulumi-gpu-cluster/sdk/go/gpu-cluster"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/config"
)

func main() {
	pulumi.Run(func(ctx *pulumi.Context) error {
		// readme: begin
		conf := config.New(ctx, "")
		// Outputs as inputs: an existing VPC's ids (here from pulumi.String; often another stack's or
		// resource's outputs) and an SSH key kept as a secret in the stack's config.
		vpcID := pulumi.String("vpc-0123456789abcdef0").ToStringOutput()
		subnetID := pulumi.String("subnet-0123456789abcdef0").ToStringOutput()

		fabric, scheduler := gpu.FabricRequired, gpu.SchedulerSlurm
		cluster, err := gpu.NewGpuCluster(ctx, "train", &gpu.GpuClusterArgs{
			Cloud:     gpu.CloudAws,
			Region:    pulumi.StringRef("us-east-1"),
			Zone:      pulumi.StringRef("us-east-1a"),
			Gpu:       pulumi.StringRef("H100:8"),
			Nodes:     pulumi.IntRef(2),
			Fabric:    &fabric,
			Scheduler: &scheduler,
			Network: &gpu.NetworkArgs{
				Existing: &gpu.ExistingNetworkArgs{VpcId: vpcID, SubnetIds: pulumi.StringArray{subnetID}},
			},
			SshPublicKey: conf.RequireSecret("sshPublicKey"),
			Tags:         map[string]string{"team": "ml"},
		})
		if err != nil {
			return err
		}

		// Typed outputs: objects with named fields, not maps.
		ctx.Export("login", cluster.Access.Command())
		ctx.Export("listNodes", cluster.Access.Nodes())
		ctx.Export("partition", cluster.Slurm.Partition())
		ctx.Export("identity", cluster.Identity.Name())
		ctx.Export("fabricGbpsPerNode", cluster.FabricGbpsPerNode)
		// readme: end
		return nil
	})
}
