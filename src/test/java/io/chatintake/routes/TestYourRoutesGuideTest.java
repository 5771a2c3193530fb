package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

import java.io.File;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import org.junit.platform.launcher.listeners.SummaryGeneratingListener;

/**
 * The README's "Test your routes" template, read from README.md as teams copy it, compiled and run
 * against the route of its "Add a channel" guide (routes/heron.yaml).
 */
class TestYourRoutesGuideTest {
    @TempDir
    Path dir;

    @Test
    void theTemplateCompilesAndPassesAgainstTheGuidesRoute() throws Exception {
        String readme = Files.readString(Path.of("README.md"));
        Path route = Files.writeString(dir.resolve("heron.yaml"), between(readme, "<!-- add-a-channel:yaml -->\n```yaml\n",
                "```\n<!-- /add-a-channel:yaml -->"));
        String template = between(readme, "<!-- test-your-routes:java -->\n```java\n", "```\n<!-- /test-your-routes:java -->");
        assertThat(template).contains("loadRoutes(\"routes/heron.yaml\")");
        Path source = dir.resolve("src/io/chatintake/routes/HeronRouteTest.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, template.replace("\"routes/heron.yaml\"", "\"" + route + "\""));

        Path classes = Files.createDirectories(dir.resolve("classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        String classpath = System.getProperty("java.class.path") + File.pathSeparator + Path.of("target/test-classes").toAbsolutePath();
        assertThat(javac.run(null, null, null, "-d", classes.toString(), "-cp", classpath, source.toString())).as("javac").isZero();

        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()}, getClass().getClassLoader())) {
            Class<?> test = loader.loadClass("io.chatintake.routes.HeronRouteTest");
            SummaryGeneratingListener summary = new SummaryGeneratingListener();
            LauncherFactory.create().execute(LauncherDiscoveryRequestBuilder.request().selectors(selectClass(test)).build(), summary);
            assertThat(summary.getSummary().getFailures()).extracting(failure -> failure.getException().toString()).isEmpty();
            assertThat(summary.getSummary().getTestsSucceededCount()).isEqualTo(1);
        }
    }

    private static String between(String text, String begin, String end) {
        int start = text.indexOf(begin);
        assertThat(start).as("the README's block " + begin.lines().findFirst().orElse("")).isPositive();
        return text.substring(start + begin.length(), text.indexOf(end, start));
    }
}
