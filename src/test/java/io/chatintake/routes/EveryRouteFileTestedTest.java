package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Every shipped route file has a route test beside this one that loads it, as the README promises. */
class EveryRouteFileTestedTest {
    private static final Path ROUTES = Path.of("routes");
    private static final Path ROUTE_TESTS = Path.of("src/test/java/io/chatintake/routes");

    @Test
    void everyShippedRouteFileIsLoadedByARouteTest() throws IOException {
        List<String> files;
        try (Stream<Path> shipped = Files.list(ROUTES)) {
            files = shipped.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".yaml") || n.endsWith(".java")).sorted().toList();
        }
        String tests;
        try (Stream<Path> sources = Files.list(ROUTE_TESTS)) {
            StringBuilder all = new StringBuilder();
            for (Path test : sources.filter(f -> f.getFileName().toString().endsWith("RouteTest.java")).toList()) {
                all.append(Files.readString(test));
            }
            tests = all.toString();
        }
        assertThat(files).as("route files shipped").contains("discord.yaml", "discord-handlers.yaml");
        assertThat(files).as("route files no *RouteTest loads").allMatch(file -> tests.contains("loadRoutes(\"routes/" + file + "\")"));
    }
}
