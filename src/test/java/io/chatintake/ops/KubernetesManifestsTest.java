package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Manual;
import io.fabric8.kubernetes.api.model.ConfigMap;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvFromSource;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Probe;
import io.fabric8.kubernetes.api.model.Secret;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.Deployment;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicy;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyEgressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyIngressRule;
import io.fabric8.kubernetes.api.model.networking.v1.NetworkPolicyPort;
import io.fabric8.kubernetes.api.model.policy.v1.PodDisruptionBudget;
import java.io.IOException;
import java.io.Reader;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;


/**
 * The manifests in {@code k8s/} parsed strictly with the Fabric8 Kubernetes model (an unknown or
 * misspelt field fails), and checked against the product: probes on paths the runner serves
 * ({@code RunnerLifecycleIT} asserts they answer 200), every environment variable a documented
 * setting, the ConfigMap exactly {@code config/} and {@code routes/}, secrets only in the Secret,
 * the stop sequence longer than a long poll, and the image of {@code k8s/Containerfile}.
 */
public class KubernetesManifestsTest {
    /** The runner's health endpoints (camel-platform-http-main management, camel-health). */
    static final String LIVE = "/observe/health/live";
    static final String READY = "/observe/health/ready";
    static final Path K8S = Path.of("k8s");
    static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory())
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES);
    private static final Map<String, Class<? extends HasMetadata>> KINDS = Map.of(
            "v1/ConfigMap", ConfigMap.class,
            "v1/Secret", Secret.class,
            "v1/Service", Service.class,
            "apps/v1/Deployment", Deployment.class,
            "policy/v1/PodDisruptionBudget", PodDisruptionBudget.class,
            "networking.k8s.io/v1/NetworkPolicy", NetworkPolicy.class);
    private static final String CAMEL_K_MANIFEST = "camel-k-integration.yaml";

    @Test
    void everyManifestParsesStrictlyWithTheKubernetesModel() throws IOException {
        List<HasMetadata> resources = plainResources();
        assertThat(resources).extracting(HasMetadata::getKind).containsExactlyInAnyOrder(
                "ConfigMap", "ConfigMap", "ConfigMap", "Secret", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy");
    }

    @Test
    void aMisspeltFieldIsAnError() throws IOException {
        String wrong = Files.readString(K8S.resolve("deployment.yaml")).replace("readinessProbe:", "readinesProbe:");
        JsonNode deployment = YAML.readTree(wrong.split("\n---\n")[0]);

        assertThat(unknownFields(YAML.treeToValue(deployment, Deployment.class)))
                .containsExactly("spec.template.spec.containers[0].readinesProbe");
    }

    @Test
    void theDeploymentRunsSeveralReplicasProbedOnTheRunnersHealthEndpoints() throws IOException {
        Deployment deployment = the(Deployment.class);
        Container container = container();
        int httpPort = port(container);

        assertThat(deployment.getSpec().getReplicas()).isGreaterThanOrEqualTo(2);
        assertThat(httpPort).isEqualTo(Integer.parseInt(configuration().getProperty("chat-intake.http.port")));
        assertThat(port(container, "management")).as("the management port the runner is given")
                .isEqualTo(managementPort()).isNotEqualTo(httpPort);
        assertThat(the(Deployment.class).getSpec().getTemplate().getMetadata().getAnnotations())
                .containsEntry("prometheus.io/port", Integer.toString(managementPort()))
                .containsEntry("prometheus.io/path", "/observe/metrics");
        assertProbe(container.getReadinessProbe(), READY);
        assertProbe(container.getLivenessProbe(), LIVE);
        assertProbe(container.getStartupProbe(), LIVE);
        assertThat(deployment.getSpec().getSelector().getMatchLabels())
                .isEqualTo(deployment.getSpec().getTemplate().getMetadata().getLabels());
    }

    @Test
    void stoppingOutlastsALongPollAndTheShutdownAfterAPreStopPause() throws IOException {
        PodSpec pod = the(Deployment.class).getSpec().getTemplate().getSpec();
        List<String> preStop = container().getLifecycle().getPreStop().getExec().getCommand();
        Properties config = configuration();
        int pollTimeout = Integer.parseInt(config.getProperty("telegram.poll-timeout-seconds"));
        int shutdownTimeout = Integer.parseInt(config.getProperty("camel.main.shutdown-timeout"));

        assertThat(preStop).hasSize(2).first().isEqualTo("sleep");
        int pause = Integer.parseInt(preStop.get(1));
        assertThat(pause).isBetween(1, 15);
        assertThat(pod.getTerminationGracePeriodSeconds()).isGreaterThan((long) pause + Math.max(pollTimeout, shutdownTimeout));
    }

    @Test
    void thePodRunsAsTheImagesNonRootUserOnAReadOnlyRootWithAWritableTmpAndBoundedResources() throws IOException {
        PodSpec pod = the(Deployment.class).getSpec().getTemplate().getSpec();
        Container container = container();

        assertThat(pod.getSecurityContext().getRunAsNonRoot()).isTrue();
        assertThat(pod.getSecurityContext().getRunAsUser()).isEqualTo(Containerfile.read().user());
        assertThat(container.getSecurityContext().getReadOnlyRootFilesystem()).isTrue();
        assertThat(container.getSecurityContext().getAllowPrivilegeEscalation()).isFalse();
        assertThat(volumeAt(pod, container, "/tmp").getEmptyDir()).isNotNull();
        assertThat(container.getResources().getRequests()).containsKeys("cpu", "memory", "ephemeral-storage");
        assertThat(container.getResources().getLimits()).containsKeys("cpu", "memory", "ephemeral-storage");
        assertThat(pod.getVolumes()).filteredOn(v -> v.getEmptyDir() != null).isNotEmpty()
                .allSatisfy(v -> assertThat(v.getEmptyDir().getSizeLimit()).as(v.getName() + " bounded").isNotNull());
        assertThat(pod.getAutomountServiceAccountToken()).isFalse();
        assertThat(container.getImage()).isEqualTo(CamelKIntegrationTest.image());
    }

    @Test
    void configurationAndRoutesAreMountedWhereTheRunnerReadsThem() throws IOException {
        PodSpec pod = the(Deployment.class).getSpec().getTemplate().getSpec();
        Container container = container();
        Map<String, String> env = literalEnv(container);

        Path configFile = Path.of(env.get("CHAT_INTAKE_CONFIG"));
        Volume config = volumeAt(pod, container, configFile.getParent().toString());
        assertThat(config.getConfigMap().getName()).isEqualTo(KubernetesConfigMap.CONFIG_MAP);
        assertThat(configFile.getFileName().toString()).isEqualTo(KubernetesConfigMap.CONFIG_KEY);
        Volume routes = volumeAt(pod, container, env.get("CHAT_INTAKE_ROUTES_DIR"));
        assertThat(routes.getConfigMap().getName()).isEqualTo(KubernetesConfigMap.ROUTES_MAP);
        // A subPath mount never sees ConfigMap updates; a whole-directory mount does.
        assertThat(container.getVolumeMounts()).allSatisfy(mount -> assertThat(mount.getSubPath()).isNull());
        assertThat(container.getEnvFrom()).extracting(this::envSourceName)
                .containsExactly("configmap:chat-intake-env", "secret:chat-intake-secrets");
    }

    @Test
    void theConfigMapIsExactlyConfigAndRoutesAsGenerated() throws IOException {
        String committed = Files.readString(K8S.resolve("configmap.yaml"), StandardCharsets.UTF_8);
        String generated = KubernetesConfigMap.render(Path.of("config/application.properties"), Path.of("routes"));

        assertThat(committed).as("k8s/configmap.yaml is not what config/ and routes/ give: regenerate it from the repository"
                + " root with `mvn -B -q package -DskipTests && " + KubernetesConfigMap.COMMAND + "`").isEqualTo(generated);
        // And as Kubernetes reads it, every file byte for byte.
        ConfigMap routes = configMap(KubernetesConfigMap.ROUTES_MAP);
        try (Stream<Path> files = Files.list(Path.of("routes"))) {
            Map<String, String> expected = files.filter(Files::isRegularFile).collect(Collectors.toMap(
                    f -> f.getFileName().toString(), KubernetesManifestsTest::read));
            assertThat(routes.getData()).isEqualTo(expected);
        }
        assertThat(configMap(KubernetesConfigMap.CONFIG_MAP).getData())
                .isEqualTo(Map.of(KubernetesConfigMap.CONFIG_KEY, read(Path.of("config/application.properties"))));
    }

    @Test
    void everyEnvironmentVariableNamedIsADocumentedSetting() throws IOException {
        Set<String> named = new TreeSet<>(literalEnv(container()).keySet());
        named.addAll(configMap("chat-intake-env").getData().keySet());
        named.addAll(the(Secret.class).getStringData().keySet());
        named.addAll(CamelKIntegrationTest.environmentVariables().keySet());
        Set<String> settings = configuration().stringPropertyNames().stream().map(Settings::envName).collect(Collectors.toSet());
        String readme = Manual.text();

        assertThat(named).allSatisfy(name -> assertThat(settings.contains(name) || readme.contains("`" + name + "`"))
                .as("%s is neither a key of config/application.properties nor named in the manual", name).isTrue());
    }

    @Test
    void secretsAreOnlyInTheSecret() throws IOException {
        Secret secret = the(Secret.class);
        Set<String> literal = new TreeSet<>(literalEnv(container()).keySet());
        literal.addAll(configMap("chat-intake-env").getData().keySet());
        Properties shipped = new Properties();
        shipped.load(new java.io.StringReader(configMap(KubernetesConfigMap.CONFIG_MAP).getData().get(KubernetesConfigMap.CONFIG_KEY)));

        assertThat(literal).noneMatch(Settings::isSecretKey);
        assertThat(shipped.stringPropertyNames()).filteredOn(Settings::isSecretKey)
                .allSatisfy(key -> assertThat(shipped.getProperty(key)).as(key).isEmpty());
        assertThat(secret.getData()).as("no values").isNullOrEmpty();
        assertThat(secret.getStringData()).as("no placeholder values: the Secret is created from real ones (kubectl create secret)")
                .allSatisfy((key, value) -> assertThat(value).as(key).isEmpty());
        assertThat(Files.readString(K8S.resolve("secret.yaml"))).contains("kubectl create secret generic " + secret.getMetadata().getName())
                .contains("--from-literal=").doesNotContainIgnoringCase("change-me");
        assertThat(secret.getStringData()).containsKeys("CHAT_INTAKE_DB_URL", "CHAT_INTAKE_DB_PASSWORD", "TELEGRAM_BOT_TOKEN",
                "UNIFYPORT_SIGNING_SECRETS", "MEDIA_S3_ACCESS_KEY_ID", "MEDIA_S3_SECRET_ACCESS_KEY");
        assertThat(container().getEnv()).allSatisfy(env -> assertThat(env.getValueFrom()).isNull());
    }

    @Test
    void theServiceOpensOnlyTheWebhookPortAndTheBudgetAndNetworkPolicySelectThePods() throws IOException {
        Map<String, String> labels = the(Deployment.class).getSpec().getTemplate().getMetadata().getLabels();
        Service service = the(Service.class);
        PodDisruptionBudget budget = the(PodDisruptionBudget.class);
        NetworkPolicy policy = the(NetworkPolicy.class);

        assertThat(labels).containsAllEntriesOf(service.getSpec().getSelector());
        assertThat(service.getSpec().getPorts()).singleElement()
                .satisfies(p -> assertThat(p.getTargetPort().getStrVal()).isEqualTo("http"));
        assertThat(labels).containsAllEntriesOf(budget.getSpec().getSelector().getMatchLabels());
        assertThat(budget.getSpec().getMinAvailable().getIntVal()).isBetween(1, the(Deployment.class).getSpec().getReplicas() - 1);
        assertThat(labels).containsAllEntriesOf(policy.getSpec().getPodSelector().getMatchLabels());
        assertNetworkPolicy(policy, "http", "management");
    }

    /**
     * In: the webhook port only from the ingress namespace, the management port only from the
     * monitoring namespace. Out: only DNS, the database, and HTTPS outside private and link-local ranges.
     */
    static void assertNetworkPolicy(NetworkPolicy policy, Object webhookPort, Object managementPort) {
        assertThat(policy.getSpec().getPolicyTypes()).containsExactlyInAnyOrder("Ingress", "Egress");
        Map<Object, String> from = new java.util.HashMap<>();
        for (NetworkPolicyIngressRule rule : policy.getSpec().getIngress()) {
            assertThat(rule.getFrom()).as("every ingress rule says from where").singleElement().satisfies(peer -> {
                assertThat(peer.getIpBlock()).isNull();
                assertThat(peer.getNamespaceSelector().getMatchLabels()).containsKey("kubernetes.io/metadata.name");
            });
            String namespace = rule.getFrom().get(0).getNamespaceSelector().getMatchLabels().get("kubernetes.io/metadata.name");
            assertThat(rule.getPorts()).isNotEmpty().allSatisfy(p -> {
                assertThat(p.getProtocol()).isEqualTo("TCP");
                from.put(portOf(p), namespace);
            });
        }
        assertThat(from).containsOnlyKeys(webhookPort, managementPort);
        assertThat(from.get(webhookPort)).contains("ingress");
        assertThat(from.get(managementPort)).isEqualTo("monitoring");

        Set<Object> out = new TreeSet<>(java.util.Comparator.comparing(Object::toString));
        for (NetworkPolicyEgressRule rule : policy.getSpec().getEgress()) {
            assertThat(rule.getTo()).as("every egress rule says where to").isNotEmpty();
            assertThat(rule.getPorts()).as("every egress rule names its ports").isNotEmpty();
            rule.getPorts().forEach(p -> out.add(portOf(p)));
            rule.getTo().stream().filter(peer -> peer.getIpBlock() != null).forEach(peer -> {
                assertThat(rule.getPorts()).extracting(KubernetesManifestsTest::portOf).containsOnly(443);
                assertThat(peer.getIpBlock().getExcept()).contains("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16");
            });
        }
        assertThat(out).containsExactlyInAnyOrder(53, 443, 5432);
    }

    private static Object portOf(NetworkPolicyPort port) {
        return port.getPort().getStrVal() != null ? port.getPort().getStrVal() : port.getPort().getIntVal();
    }

    @Test
    void theContainerfileBuildsTheJarIntoAJre17ImageAsANumericNonRootUserSizedFromTheContainersMemory() throws IOException {
        Containerfile file = Containerfile.read();

        assertThat(file.from()).as("pinned: an exact release tag or a digest, never a moving tag")
                .matches("(docker\\.io/library/)?eclipse-temurin:17\\.0\\.\\d+_\\d+-jre(-[a-z]+)?(@sha256:[0-9a-f]{64})?");
        assertThat(file.copies()).containsEntry("target/chat-intake.jar", "/deployments/chat-intake.jar");
        assertThat(file.user()).isGreaterThan(0L);
        assertThat(file.entrypoint()).first().isEqualTo("java");
        assertThat(file.entrypoint()).anyMatch(a -> a.matches("-XX:MaxRAMPercentage=\\d+(\\.\\d+)?"))
                .noneMatch(a -> a.startsWith("-Xmx"))
                .containsSubsequence("-jar", "/deployments/chat-intake.jar");
    }

    // --- reading the manifests ---------------------------------------------------------------

    /** Every path the Deployment probes (RunnerLifecycleIT asserts that each answers 200). */
    public static Set<String> probePaths() throws IOException {
        Container container = container();
        return Stream.of(container.getStartupProbe(), container.getReadinessProbe(), container.getLivenessProbe())
                .map(probe -> probe.getHttpGet().getPath()).collect(Collectors.toCollection(TreeSet::new));
    }

    private static List<HasMetadata> plainResources;

    /** Every resource of the plain deployment (every k8s/*.yaml but the Camel K one), strictly typed. */
    static synchronized List<HasMetadata> plainResources() throws IOException {
        if (plainResources == null) {
            plainResources = readPlainResources();
        }
        return plainResources;
    }

    private static List<HasMetadata> readPlainResources() throws IOException {
        List<HasMetadata> resources = new ArrayList<>();
        try (Stream<Path> files = Files.list(K8S)) {
            for (Path file : files.filter(f -> f.toString().endsWith(".yaml")).sorted().toList()) {
                if (file.getFileName().toString().equals(CAMEL_K_MANIFEST)) {
                    continue;
                }
                for (JsonNode document : documents(file)) {
                    String type = document.path("apiVersion").asText() + "/" + document.path("kind").asText();
                    assertThat(KINDS).as(file + ": unexpected resource " + type).containsKey(type);
                    HasMetadata resource = YAML.treeToValue(document, KINDS.get(type));
                    assertThat(unknownFields(resource)).as(file + ": fields the Kubernetes API does not know").isEmpty();
                    resources.add(resource);
                }
            }
        }
        return resources;
    }

    static List<JsonNode> documents(Path file) throws IOException {
        try (Reader reader = Files.newBufferedReader(file)) {
            return YAML.readValues(YAML.createParser(reader), JsonNode.class).readAll().stream()
                    .filter(node -> node != null && !node.isNull() && !node.isMissingNode()).toList();
        }
    }

    static <T extends HasMetadata> T the(Class<T> type) throws IOException {
        return plainResources().stream().filter(type::isInstance).map(type::cast).findFirst().orElseThrow();
    }

    static ConfigMap configMap(String name) throws IOException {
        return plainResources().stream().filter(r -> r instanceof ConfigMap && r.getMetadata().getName().equals(name))
                .map(ConfigMap.class::cast).findFirst().orElseThrow(() -> new AssertionError("no ConfigMap " + name));
    }

    /**
     * Fabric8's model keeps fields it does not know in {@code additionalProperties} instead of
     * failing: each one found anywhere in the tree is an unknown field, by its path.
     */
    static List<String> unknownFields(Object resource) {
        List<String> unknown = new ArrayList<>();
        collectUnknown(resource, "", unknown);
        return unknown;
    }

    private static void collectUnknown(Object value, String path, List<String> unknown) {
        if (value instanceof Collection<?> items) {
            int i = 0;
            for (Object item : items) {
                collectUnknown(item, path + "[" + i++ + "]", unknown);
            }
        } else if (value instanceof Map<?, ?> map) {
            map.forEach((k, v) -> collectUnknown(v, path + "." + k, unknown));
        } else if (value != null && value.getClass().getName().startsWith("io.fabric8.")) {
            for (Class<?> type = value.getClass(); type != Object.class; type = type.getSuperclass()) {
                for (Field field : type.getDeclaredFields()) {
                    if (Modifier.isStatic(field.getModifiers())) {
                        continue;
                    }
                    field.setAccessible(true);
                    Object fieldValue = get(field, value);
                    String child = path.isEmpty() ? field.getName() : path + "." + field.getName();
                    if (field.getName().equals("additionalProperties")) {
                        ((Map<?, ?>) fieldValue).keySet().forEach(k -> unknown.add(path.isEmpty() ? k.toString() : path + "." + k));
                    } else {
                        collectUnknown(fieldValue, child, unknown);
                    }
                }
            }
        }
    }

    private static Object get(Field field, Object target) {
        try {
            return field.get(target);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException(e);
        }
    }

    private static Container container() throws IOException {
        List<Container> containers = the(Deployment.class).getSpec().getTemplate().getSpec().getContainers();
        assertThat(containers).hasSize(1);
        return containers.get(0);
    }

    private static int port(Container container) {
        return port(container, "http");
    }

    private static int port(Container container, String name) {
        return container.getPorts().stream().filter(p -> name.equals(p.getName())).findFirst().orElseThrow().getContainerPort();
    }

    /** The management port environment.yaml gives the runner (health, metrics and /status apart from the webhooks). */
    static int managementPort() throws IOException {
        return Integer.parseInt(configMap("chat-intake-env").getData().get(Settings.envName(ManagementPort.KEY)));
    }

    private static void assertProbe(Probe probe, String path) {
        assertThat(probe.getHttpGet().getPath()).isEqualTo(path);
        assertThat(probe.getHttpGet().getPort().getStrVal()).as("probed on the management port").isEqualTo("management");
    }

    private static Map<String, String> literalEnv(Container container) {
        return container.getEnv().stream().collect(Collectors.toMap(EnvVar::getName, e -> e.getValue() == null ? "" : e.getValue()));
    }

    private String envSourceName(EnvFromSource source) {
        return source.getConfigMapRef() != null ? "configmap:" + source.getConfigMapRef().getName()
                : "secret:" + source.getSecretRef().getName();
    }

    private static Volume volumeAt(PodSpec pod, Container container, String mountPath) {
        String name = container.getVolumeMounts().stream().filter(m -> m.getMountPath().equals(mountPath)).map(VolumeMount::getName)
                .findFirst().orElseThrow(() -> new AssertionError("nothing is mounted at " + mountPath));
        return pod.getVolumes().stream().filter(v -> v.getName().equals(name)).findFirst().orElseThrow();
    }

    static Properties configuration() throws IOException {
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(Path.of("config/application.properties"))) {
            properties.load(reader);
        }
        return properties;
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The few instructions of k8s/Containerfile the deployment depends on. */
    record Containerfile(String from, Map<String, String> copies, long user, List<String> entrypoint) {
        static Containerfile read() throws IOException {
            String from = null;
            Map<String, String> copies = new java.util.HashMap<>();
            long user = -1;
            List<String> entrypoint = List.of();
            for (String line : Files.readAllLines(K8S.resolve("Containerfile"))) {
                String[] words = line.trim().split("\\s+", 2);
                switch (words[0]) {
                    case "FROM" -> from = words[1];
                    case "COPY" -> {
                        String[] paths = words[1].split("\\s+");
                        copies.put(paths[0], paths[1]);
                    }
                    case "USER" -> user = Long.parseLong(words[1].split(":")[0]);
                    case "ENTRYPOINT" -> entrypoint = List.of(YAML.readValue(words[1], String[].class));
                    default -> {
                    }
                }
            }
            return new Containerfile(from, copies, user, entrypoint);
        }
    }
}
