package io.chatintake.ops;

import static io.chatintake.ops.KubernetesManifestsTest.K8S;
import static io.chatintake.ops.KubernetesManifestsTest.LIVE;
import static io.chatintake.ops.KubernetesManifestsTest.READY;
import static io.chatintake.ops.KubernetesManifestsTest.YAML;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.networknt.schema.JsonMetaSchema;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.NonValidationKeyword;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import io.chatintake.config.Settings;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * {@code k8s/camel-k-integration.yaml}, a self-managed build Integration for Camel K 2.9, validated
 * against the OpenAPI v3 schema of the Integration CRD of Camel K v2.9.2 (as the API server would,
 * unknown fields included), and checked to run the same image, probes, ConfigMaps and settings as
 * the plain Deployment.
 */
class CamelKIntegrationTest {
    private static final String CRD = "/camel.apache.org_integrations.yaml";

    @Test
    void theIntegrationIsValidForTheCamelK292Crd() throws IOException {
        assertThat(validate(integration())).isEmpty();
    }

    @Test
    void theValidatorRejectsAMisspeltTraitAndAWrongType() throws IOException {
        ObjectNode wrong = integration().deepCopy();
        ObjectNode spec = (ObjectNode) wrong.get("spec");
        spec.put("replicas", "two");
        ObjectNode traits = (ObjectNode) spec.get("traits");
        traits.set("helth", traits.remove("health"));

        Set<String> errors = validate(wrong);
        System.out.println("the wrong manifest: " + errors);
        assertThat(errors).anySatisfy(m -> assertThat(m).contains("helth"))
                .anySatisfy(m -> assertThat(m).contains("replicas").contains("string"));
    }

    @Test
    void itIsASelfManagedBuildOfTheContainerfilesImageWithHealthProbesPrometheusAndReplicas() throws IOException {
        JsonNode spec = integration().get("spec");
        JsonNode traits = spec.get("traits");
        int httpPort = Integer.parseInt(KubernetesManifestsTest.configuration().getProperty("chat-intake.http.port"));

        assertThat(image()).isNotBlank();
        assertThat(spec.has("sources")).as("no sources: the routes come from the ConfigMap").isFalse();
        assertThat(spec.get("replicas").asInt()).isGreaterThanOrEqualTo(2);
        assertThat(traits.at("/container/port").asInt()).isEqualTo(httpPort);
        assertThat(traits.at("/container/runAsNonRoot").asBoolean()).isTrue();
        assertThat(traits.at("/container/runAsUser").asLong()).isEqualTo(KubernetesManifestsTest.Containerfile.read().user());
        assertThat(traits.at("/health/readinessProbe").asText()).isEqualTo(READY);
        assertThat(traits.at("/health/livenessProbe").asText()).isEqualTo(LIVE);
        assertThat(traits.at("/health/livenessProbeEnabled").asBoolean()).isTrue();
        int managementPort = KubernetesManifestsTest.managementPort();
        assertThat(traits.at("/health/readinessPort").asInt()).isEqualTo(managementPort);
        assertThat(traits.at("/health/livenessPort").asInt()).isEqualTo(managementPort);
        assertThat(traits.at("/health/startupPort").asInt()).isEqualTo(managementPort);
        assertThat(integration().at("/spec/template/spec/containers/0/ports/0/containerPort").asInt()).isEqualTo(managementPort);
        assertThat(traits.at("/prometheus/enabled").asBoolean()).isTrue();
        JsonNode podMonitor = document("PodMonitor");
        assertThat(podMonitor.at("/spec/selector/matchLabels/camel.apache.org~1integration").asText())
                .isEqualTo(integration().at("/metadata/name").asText());
        assertThat(podMonitor.at("/spec/podMetricsEndpoints/0/port").asText()).isEqualTo("management");
        assertThat(podMonitor.at("/spec/podMetricsEndpoints/0/path").asText()).isEqualTo("/observe/metrics");
    }

    @Test
    void routesAndConfigurationComeFromTheSameConfigMapsMountedWhereTheRunnerReadsThem() throws IOException {
        Map<String, String> env = environmentVariables();
        Set<String> resources = new TreeSet<>();
        integration().at("/spec/traits/mount/resources").forEach(r -> resources.add(r.asText()));

        assertThat(resources).containsExactlyInAnyOrder(
                "configmap:" + KubernetesConfigMap.CONFIG_MAP + "@" + env.get("CHAT_INTAKE_CONFIG").replace("/" + KubernetesConfigMap.CONFIG_KEY, ""),
                "configmap:" + KubernetesConfigMap.ROUTES_MAP + "@" + env.get("CHAT_INTAKE_ROUTES_DIR"));
        assertThat(integration().at("/spec/traits/mount/emptyDirs").toString()).contains(":/tmp:");
    }

    @Test
    void itIsHardenedLikeTheDeploymentWithItsOwnNetworkPolicyNoTokenAndBoundedStorage() throws IOException {
        JsonNode pod = integration().at("/spec/template/spec");
        assertThat(pod.get("automountServiceAccountToken").asBoolean(true)).isFalse();
        assertThat(pod.at("/containers/0/resources/requests/ephemeral-storage").asText()).isNotBlank();
        assertThat(pod.at("/containers/0/resources/limits/ephemeral-storage").asText()).isNotBlank();
        assertThat(integration().at("/spec/traits/mount/emptyDirs")).isNotEmpty()
                .allSatisfy(dir -> assertThat(dir.asText()).as("name:/path:sizeLimit").matches("[a-z-]+:/[^:]+:\\d+[KMG]i"));

        NetworkPolicy policy = YAML.treeToValue(document("NetworkPolicy"), NetworkPolicy.class);
        assertThat(KubernetesManifestsTest.unknownFields(policy)).isEmpty();
        assertThat(policy.getSpec().getPodSelector().getMatchLabels())
                .containsEntry("camel.apache.org/integration", integration().at("/metadata/name").asText());
        int httpPort = Integer.parseInt(KubernetesManifestsTest.configuration().getProperty("chat-intake.http.port"));
        KubernetesManifestsTest.assertNetworkPolicy(policy, httpPort, KubernetesManifestsTest.managementPort());
    }

    @Test
    void everySettingOfTheEnvironmentConfigMapAndTheSecretIsPassedByReferenceAndNoSecretIsWritten() throws IOException {
        Map<String, String> env = environmentVariables();
        Secret secret = KubernetesManifestsTest.the(Secret.class);
        Map<String, String> expected = new LinkedHashMap<>();
        KubernetesManifestsTest.configMap("chat-intake-env").getData().keySet()
                .forEach(k -> expected.put(k, "configmap:chat-intake-env/" + k));
        secret.getStringData().keySet().forEach(k -> expected.put(k, "secret:" + secret.getMetadata().getName() + "/" + k));

        assertThat(env).containsAllEntriesOf(expected);
        assertThat(env).allSatisfy((name, value) -> {
            if (!expected.containsKey(name)) {
                assertThat(Settings.isSecretKey(name)).as(name + " is a secret written as a literal").isFalse();
                assertThat(value).doesNotStartWith("secret:").doesNotStartWith("configmap:");
            }
        });
    }

    @Test
    void itStopsLikeTheDeployment() throws IOException {
        PodSpec deployment = KubernetesManifestsTest.the(Deployment.class).getSpec().getTemplate().getSpec();
        JsonNode template = integration().at("/spec/template/spec");

        assertThat(template.get("terminationGracePeriodSeconds").asLong()).isEqualTo(deployment.getTerminationGracePeriodSeconds());
        assertThat(template.at("/containers/0/name").asText()).isEqualTo("integration");
        assertThat(YAML.convertValue(template.at("/containers/0/lifecycle/preStop/exec/command"), String[].class))
                .containsExactlyElementsOf(deployment.getContainers().get(0).getLifecycle().getPreStop().getExec().getCommand());
        assertThat(template.at("/containers/0/securityContext/readOnlyRootFilesystem").asBoolean()).isTrue();
        assertThat(integration().at("/spec/traits/pod/enabled").asBoolean()).isTrue();
    }

    // --- reading and validating ---------------------------------------------------------------

    static ObjectNode integration() throws IOException {
        return (ObjectNode) document("Integration");
    }

    /** The file's one document of this kind: the Integration, its NetworkPolicy, its PodMonitor. */
    static JsonNode document(String kind) throws IOException {
        var documents = KubernetesManifestsTest.documents(K8S.resolve("camel-k-integration.yaml"));
        assertThat(documents).extracting(d -> d.path("kind").asText()).containsExactlyInAnyOrder("Integration", "NetworkPolicy", "PodMonitor");
        return documents.stream().filter(d -> d.path("kind").asText().equals(kind)).findFirst().orElseThrow();
    }

    static String image() throws IOException {
        return integration().at("/spec/traits/container/image").asText();
    }

    /** The environment trait's variables: name -> value or configmap:/secret: reference. */
    static Map<String, String> environmentVariables() throws IOException {
        return java.util.stream.StreamSupport.stream(integration().at("/spec/traits/environment/vars").spliterator(), false)
                .map(JsonNode::asText)
                .collect(Collectors.toMap(v -> v.substring(0, v.indexOf('=')), v -> v.substring(v.indexOf('=') + 1)));
    }

    private static JsonSchema schema;

    private static Set<String> validate(JsonNode manifest) throws IOException {
        return schema().validate(manifest).stream().map(ValidationMessage::getMessage).collect(Collectors.toCollection(TreeSet::new));
    }

    private static synchronized JsonSchema schema() throws IOException {
        if (schema != null) {
            return schema;
        }
        // Kubernetes' own keywords constrain the API server's merging, not a manifest's shape.
        JsonMetaSchema kubernetes = JsonMetaSchema.builder(JsonMetaSchema.getV4())
                .keywords(Stream.of("preserve-unknown-fields", "int-or-string", "list-type", "list-map-keys", "map-type")
                        .map(k -> new NonValidationKeyword("x-kubernetes-" + k)).toList())
                .build();
        schema = JsonSchemaFactory.builder(JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V4))
                .metaSchema(kubernetes).build().getSchema(crdSchema());
        return schema;
    }

    /** The CRD's openAPIV3Schema of camel.apache.org/v1, with the API server's rejection of unknown fields. */
    private static JsonNode crdSchema() throws IOException {
        try (InputStream crd = CamelKIntegrationTest.class.getResourceAsStream(CRD)) {
            assertThat(crd).as("test resource " + CRD).isNotNull();
            JsonNode versions = YAML.readTree(crd).at("/spec/versions");
            for (JsonNode version : versions) {
                if (version.path("name").asText().equals("v1")) {
                    JsonNode schema = version.at("/schema/openAPIV3Schema").deepCopy();
                    closeObjects(schema);
                    return schema;
                }
            }
            throw new AssertionError("the CRD has no version v1");
        }
    }

    /**
     * A structural schema prunes (and, with strict field validation, rejects) fields it does not
     * declare, unless it says x-kubernetes-preserve-unknown-fields; JSON Schema allows them unless
     * told otherwise, so every declared object is told so here.
     */
    private static void closeObjects(JsonNode schema) {
        if (!(schema instanceof ObjectNode object)) {
            return;
        }
        if (object.has("properties") && !object.has("additionalProperties")
                && !object.path("x-kubernetes-preserve-unknown-fields").asBoolean()) {
            object.put("additionalProperties", false);
        }
        object.path("properties").forEach(CamelKIntegrationTest::closeObjects);
        closeObjects(object.get("items"));
        closeObjects(object.get("additionalProperties"));
        for (String combination : new String[] {"allOf", "anyOf", "oneOf"}) {
            object.path(combination).forEach(CamelKIntegrationTest::closeObjects);
        }
    }}
