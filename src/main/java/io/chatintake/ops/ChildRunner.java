package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The runner as a child process of this jar (the demo's runner, the chaos run's replicas): the same
 * classpath, only the settings given (none of the shell's), its output appended to one log file.
 */
final class ChildRunner {
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    private ChildRunner() {
    }

    static Process start(Map<String, String> env, Path log, String... jvmOptions) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of(jvmOptions));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), "io.chatintake.app.Main"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        // Only the given settings: a CHAT_INTAKE_DB_URL or a real bot token of the shell must not leak in.
        builder.environment().keySet().removeIf(k -> Stream.of("CHAT_INTAKE_", "TELEGRAM_", "UNIFYPORT_", "MEDIA_", "ALBUMS_",
                "WORK_", "ATTACHMENTS_").anyMatch(k::startsWith));
        builder.environment().putAll(env);
        try {
            return builder.start();
        } catch (IOException e) {
            throw new ConfigurationException("cannot start a runner: " + e.getMessage(), e);
        }
    }

    /** The runner on this loopback port answers its readiness probe. */
    static boolean ready(int port) {
        try {
            return HTTP.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/observe/health/ready"))
                    .timeout(Duration.ofSeconds(5)).GET().build(), HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Waits for the process to end; kills it when it has not after 40 s. */
    static void waitFor(Process process) {
        try {
            if (!process.waitFor(40, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** The last lines of a runner's log: its temp directory goes away with the command. */
    static void printTail(Path log, PrintStream out) {
        if (!Files.isRegularFile(log)) {
            return;
        }
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            out.println("last lines of " + log.getFileName() + ":");
            lines.subList(Math.max(0, lines.size() - 30), lines.size()).forEach(l -> out.println("  " + l));
        } catch (IOException e) {
            out.println("(cannot read " + log + ": " + e.getMessage() + ")");
        }
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new ConfigurationException("no free port: " + e.getMessage());
        }
    }
}
