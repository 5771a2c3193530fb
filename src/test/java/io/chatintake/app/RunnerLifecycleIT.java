package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.ops.KubernetesManifestsTest;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The real jar as a process: start, health, SIGTERM, restart, kill -9. */
class RunnerLifecycleIT {
    @TempDir
    Path work;

    @Test
    void startsOnACleanDataDirAnswersReadyAndStopsCleanlyOnSigterm() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.output())
                    .contains("starting embedded PostgreSQL 15 in " + work.resolve("data/pg"))
                    .contains("fsync on, synchronous_commit on")
                    .contains("migrations: schema at version")
                    .contains("http: listening on port " + runner.httpPort());

            HttpResponse<String> ready = runner.get("/observe/health/ready");
            assertThat(ready.statusCode()).isEqualTo(200);
            assertThat(ready.body()).contains("\"UP\"");
            assertThat(runner.get("/observe/health").statusCode()).isEqualTo(200);
            // The paths the Kubernetes manifests probe answer.
            assertThat(KubernetesManifestsTest.probePaths()).isNotEmpty().allSatisfy(path ->
                    assertThat(runner.get(path).statusCode()).as(path).isEqualTo(200));
            assertThat(runner.get("/observe/metrics").body()).contains("app_info");
            assertThat(Sql.string(RunnerProcess.embeddedDatabase(env), "SHOW fsync")).isEqualTo("on");
            assertThat(Sql.string(RunnerProcess.embeddedDatabase(env), "SHOW synchronous_commit")).isEqualTo("on");
            long postgresPid = postmasterPid();

            int exit = runner.terminate(Duration.ofSeconds(60));

            assertThat(exit).as(runner.output()).isIn(0, 143);
            assertThat(runner.output()).contains("chat-intake stopped").doesNotContain("Exception");
            assertThat(stopsWithin(postgresPid, Duration.ofSeconds(10))).as("embedded postgres stopped with the runner").isTrue();
        }
    }

    @Test
    void restartOnTheSameDataDirKeepsTheData() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        try (RunnerProcess first = RunnerProcess.start(work, env).awaitReady()) {
            first.terminate(Duration.ofSeconds(60));
        }
        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(second.output()).contains("0 migration(s) applied now");
            assertThat(Sql.count(RunnerProcess.embeddedDatabase(env), "SELECT count(*) FROM runner_start")).isEqualTo(2);
        }
    }

    @Test
    void afterKill9TheLeftoverPostgresIsStoppedAndTheRunnerStartsAgain() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        RunnerProcess first = RunnerProcess.start(work, env).awaitReady();
        long orphanPid = postmasterPid();
        first.kill9();
        assertThat(ProcessHandle.of(orphanPid).map(ProcessHandle::isAlive).orElse(false))
                .as("postgres outlives a kill -9 of the jar").isTrue();

        try (RunnerProcess second = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(second.output()).contains("found a PostgreSQL server (pid " + orphanPid + ") left running");
            assertThat(second.get("/observe/health/ready").statusCode()).isEqualTo(200);
            assertThat(Sql.count(RunnerProcess.embeddedDatabase(env), "SELECT count(*) FROM runner_start")).isEqualTo(2);
        }
    }

    @Test
    void aSecondRunnerOnTheSameDataDirIsRefusedAndTheFirstKeepsRunning() {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        try (RunnerProcess first = RunnerProcess.start(work, env).awaitReady()) {
            Map<String, String> second = new HashMap<>(env);
            second.put("CHAT_INTAKE_HTTP_PORT", Integer.toString(RunnerProcess.freePort()));
            try (RunnerProcess refused = RunnerProcess.start(work.resolve("second"), second)) {
                assertThat(refused.awaitExit(Duration.ofSeconds(60))).isEqualTo(2);
                assertThat(refused.output()).contains("chat-intake: another chat-intake process is running on "
                        + work.resolve("data/pg")).doesNotContain("\tat ");
            }
            assertThat(first.get("/observe/health/ready").statusCode()).isEqualTo(200);
        }
    }

    @Test
    void aYamlRouteDroppedIntoTheRoutesDirectoryIsPickedUpWithoutARebuild() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("first.yaml"), route("first", "/first", "one"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.get("/first").body()).isEqualTo("one");

            Files.writeString(routes.resolve("second.yaml"), route("second", "/second", "two"));

            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            HttpResponse<String> response = runner.get("/second");
            while (response.statusCode() != 200 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                response = runner.get("/second");
            }
            assertThat(response.statusCode()).as(runner.output()).isEqualTo(200);
            assertThat(response.body()).isEqualTo("two");
            assertThat(runner.get("/first").body()).isEqualTo("one");
        }
    }

    @Test
    void aBodyOverTheServerCeilingIsRefusedWhileBeingRead() throws Exception {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        env.put("CHAT_INTAKE_HTTP_MAX_BODY_BYTES", "65536");
        Path routes = Files.createDirectories(work.resolve("routes"));
        Files.writeString(routes.resolve("echo.yaml"), route("echo", "/echo", "read"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.post("/echo", new byte[200_000]).statusCode()).isEqualTo(413);
            assertThat(runner.get("/echo").body()).isEqualTo("read");
        }
    }

    @Test
    void anUnreachableDatabaseIsWaitedForInOneLineNamingTheKeyAndSigtermStillStopsTheRunner() {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        env.put("CHAT_INTAKE_DB_URL", "jdbc:postgresql://127.0.0.1:" + RunnerProcess.freePort() + "/nowhere?password=hunter2");
        env.put("CHAT_INTAKE_DB_CONNECT_TIMEOUT_SECONDS", "3");
        try (RunnerProcess runner = RunnerProcess.start(work, env)) {
            runner.awaitOutput("waiting for it", Duration.ofSeconds(60));
            Await.until("the HTTP server up", Duration.ofSeconds(30), () -> runner.get("/observe/health/live").statusCode() == 200);
            assertThat(runner.get("/observe/health/ready").statusCode()).isEqualTo(503);
            assertThat(runner.terminate(Duration.ofSeconds(60))).as("a SIGTERM exit").isIn(0, 143);
            String output = runner.output();
            assertThat(output).contains("database: not reachable (CHAT_INTAKE_DB_URL: cannot connect to jdbc:postgresql://127.0.0.1:")
                    .doesNotContain("\tat ")
                    .doesNotContain("hunter2");
            assertThat(output.split("not reachable", -1)).as("said once").hasSize(2);
        }
    }

    @Test
    void onKubernetesWithoutADatabaseUrlTheEmbeddedDatabaseRefusesToStart() {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        env.put("KUBERNETES_SERVICE_HOST", "10.96.0.1");
        try (RunnerProcess runner = RunnerProcess.start(work, env)) {
            assertThat(runner.awaitExit(Duration.ofSeconds(60))).isEqualTo(2);
            assertThat(runner.output()).contains("chat-intake: running on Kubernetes (KUBERNETES_SERVICE_HOST is set) without"
                    + " CHAT_INTAKE_DB_URL: the embedded database is for one machine; set CHAT_INTAKE_DB_URL to the PostgreSQL all"
                    + " replicas share").doesNotContain("\tat ");
            assertThat(work.resolve("data/pg")).doesNotExist();
        }
    }

    /** The layout and the update step of a Kubernetes ConfigMap volume, as the kubelet writes them. */
    @Test
    void aRoutesDirectoryMountedFromAConfigMapReloadsTheChangedRouteWhenTheConfigMapIsUpdated() throws Exception {
        Map<String, String> env = RunnerProcess.baseEnv(work);
        Path routes = Files.createDirectories(work.resolve("routes"));
        Path first = Files.createDirectories(routes.resolve("..2026_11_30_10_00_00.1"));
        Files.writeString(first.resolve("first.yaml"), route("first", "/first", "one"));
        Files.writeString(first.resolve("other.yaml"), route("other", "/other", "unchanged"));
        Files.createSymbolicLink(routes.resolve("..data"), first.getFileName());
        Files.createSymbolicLink(routes.resolve("first.yaml"), Path.of("..data/first.yaml"));
        Files.createSymbolicLink(routes.resolve("other.yaml"), Path.of("..data/other.yaml"));
        try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
            assertThat(runner.get("/first").body()).isEqualTo("one");
            assertThat(runner.output()).contains("is a mounted ConfigMap");

            Path second = Files.createDirectories(routes.resolve("..2026_11_30_10_05_00.2"));
            Files.writeString(second.resolve("first.yaml"), route("first", "/first", "two"));
            Files.writeString(second.resolve("other.yaml"), route("other", "/other", "unchanged"));
            Files.createSymbolicLink(routes.resolve("..data_tmp"), second.getFileName());
            Files.move(routes.resolve("..data_tmp"), routes.resolve("..data"), StandardCopyOption.ATOMIC_MOVE);
            Files.delete(first.resolve("first.yaml"));
            Files.delete(first.resolve("other.yaml"));
            Files.delete(first);

            Await.until("/first answers the updated route", Duration.ofSeconds(30), () -> "two".equals(runner.get("/first").body()));
            assertThat(runner.output()).contains("routes: reloaded first.yaml after a ConfigMap update")
                    .doesNotContain("reloaded other.yaml");
            assertThat(runner.get("/other").body()).isEqualTo("unchanged");
        }
    }

    @Test
    void aMalformedNumberNamesItsKey() {
        Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
        env.put("CHAT_INTAKE_HTTP_PORT", "eighty");
        try (RunnerProcess runner = RunnerProcess.start(work, env)) {
            assertThat(runner.awaitExit(Duration.ofSeconds(60))).isEqualTo(2);
            assertThat(runner.output()).contains("CHAT_INTAKE_HTTP_PORT (chat-intake.http.port) must be a whole number, got 'eighty'")
                    .doesNotContain("\tat ");
        }
    }

    private static String route(String id, String path, String body) {
        return """
                - route:
                    id: %s
                    from:
                      uri: "platform-http:%s"
                      steps:
                        - removeHeaders:
                            pattern: "*"
                        - setBody:
                            constant: "%s"
                """.formatted(id, path, body);
    }

    private static boolean stopsWithin(long pid, Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            Thread.sleep(100);
        }
        return true;
    }

    private long postmasterPid() throws Exception {
        return Long.parseLong(Files.readAllLines(work.resolve("data/pg/postmaster.pid")).get(0).trim());
    }



}
