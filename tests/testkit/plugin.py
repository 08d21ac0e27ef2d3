"""A third-party framework, as a plugin package would ship it (for the entry-point test)."""

from kubetrain.api import v1beta1
from kubetrain.operator.frameworks import framework

FRAMEWORK = framework.Framework(
    name="toyframework",
    replica_types=(),
    container="toy",
    port=7777,
    port_name="toy-port",
    restart_policy=v1beta1.RestartPolicy.NEVER,
    restart_scope=v1beta1.RestartScope.POD,
    success=lambda spec: v1beta1.SuccessPolicy(
        targets=(v1beta1.SuccessTarget(replica_type=next(iter(spec.replica_specs))),)
    ),
    env=lambda world, replica: {"TOY_INDEX": str(replica.index), "TOY_SIZE": str(len(world.replicas))},
)

NOT_A_FRAMEWORK = object()
