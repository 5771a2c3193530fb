package io.chatintake.testkit;

import com.adobe.testing.s3mock.S3MockApplication;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * A real S3 API server (Adobe's S3Mock, a Spring Boot application) in this JVM on a free loopback
 * port, plain HTTP, with the given buckets created empty and its objects under a temp directory.
 */
public final class S3Server implements AutoCloseable {
    private final S3MockApplication app;

    private S3Server(S3MockApplication app) {
        this.app = app;
    }

    public static S3Server start(String... buckets) {
        // Spring Boot would otherwise reconfigure (and on stop reset) logback for the whole test JVM.
        System.setProperty("org.springframework.boot.logging.LoggingSystem", "none");
        try {
            Path root = Files.createTempDirectory("chat-intake-s3");
            Map<String, Object> properties = new HashMap<>(Map.of(
                    S3MockApplication.PROP_HTTP_PORT, RunnerProcess.freePort(),
                    S3MockApplication.PROP_HTTPS_PORT, RunnerProcess.freePort(),
                    S3MockApplication.PROP_INITIAL_BUCKETS, String.join(",", buckets),
                    S3MockApplication.PROP_ROOT_DIRECTORY, root.toString(),
                    S3MockApplication.PROP_SILENT, true));
            // Spring reads the first classpath:application.properties, which on the test classpath is
            // chat-intake's own (the jar's built-in defaults), not S3Mock's: its defaults are given here.
            properties.putAll(Map.of("com.adobe.testing.s3mock.region", "us-east-1", "spring.jmx.enabled", false,
                    "spring.main.lazy-initialization", true, "server.tomcat.max-swallow-size", "10MB"));
            return new S3Server(S3MockApplication.start(properties));
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code media.s3.endpoint} for this server. */
    public String endpoint() {
        return "http://127.0.0.1:" + app.getHttpPort();
    }

    @Override
    public void close() {
        app.stop();
    }
}
