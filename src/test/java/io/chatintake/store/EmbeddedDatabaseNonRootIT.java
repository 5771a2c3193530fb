package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.chatintake.support.DirectoryTree;
import io.chatintake.testkit.RunnerProcess;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A developer who is not root starts the jar: the embedded PostgreSQL initialises and runs as that
 * user (as root, zonky goes through a user namespace instead). Proven with a throwaway user, which
 * only root can create: CI and these machines run as root.
 */
class EmbeddedDatabaseNonRootIT {

    @Test
    void theJarStartsItsEmbeddedDatabaseAsAnOrdinaryUserOnAFreshDataDir() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")),
                "creating a throwaway user needs root; this run is user " + System.getProperty("user.name"));
        String user = "ci-" + UUID.randomUUID().toString().substring(0, 8);
        run("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", user);
        Path work = Files.createTempDirectory("chat-intake-nonroot");
        try {
            long uid = Long.parseLong(output("id", "-u", user));
            long gid = Long.parseLong(output("id", "-g", user));
            Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
            // zonky unpacks its binaries under java.io.tmpdir: the user's own, not one root filled.
            Files.createDirectories(work.resolve("tmp"));
            Files.createDirectories(work.resolve("routes"));
            env.put("JAVA_TOOL_OPTIONS", "-Djava.io.tmpdir=" + work.resolve("tmp"));
            run("chown", "-R", uid + ":" + gid, work.toString());

            try (RunnerProcess runner = RunnerProcess.startAs(uid, gid, work, env).awaitReady()) {
                assertThat(runner.output()).contains("embedded PostgreSQL 15 in " + work.resolve("data/pg"));
                assertThat(runner.get("/observe/health/ready").statusCode()).isEqualTo(200);
                long postgres = Long.parseLong(Files.readAllLines(work.resolve("data/pg/postmaster.pid")).get(0).trim());
                assertThat(ProcessHandle.of(postgres).flatMap(p -> p.info().user())).contains(user);
                assertThat(ProcessHandle.of(runner.pid()).flatMap(p -> p.info().user())).contains(user);
                assertThat(Files.getOwner(work.resolve("data/pg/PG_VERSION")).getName()).isEqualTo(user);

                assertThat(runner.terminate(Duration.ofSeconds(60))).as(runner.output()).isIn(0, 143);
                assertThat(runner.output()).contains("chat-intake stopped");
            }
        } finally {
            run("userdel", user);
            DirectoryTree.delete(work);
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        output(command);
    }

    private static String output(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(List.of(command)).redirectErrorStream(true).start();
        String out = new String(process.getInputStream().readAllBytes()).trim();
        assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as(String.join(" ", command) + ": " + out).isZero();
        return out;
    }
}
