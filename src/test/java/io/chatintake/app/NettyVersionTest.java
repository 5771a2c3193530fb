package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.netty.util.Version;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The Netty under the HTTP server is the one pom.xml pins ({@code netty.version}), not the older one
 * Camel's BOM brings: a dependency that drags an older Netty back in fails here.
 */
class NettyVersionTest {
    private static final Pattern PINNED = Pattern.compile("<netty\\.version>([^<]+)</netty\\.version>");

    @Test
    void everyNettyArtifactOnTheClasspathIsAtLeastThePinnedVersion() throws IOException {
        Matcher pin = PINNED.matcher(Files.readString(Path.of("pom.xml")));
        assertThat(pin.find()).as("netty.version in pom.xml").isTrue();
        int[] pinned = numbers(pin.group(1));
        Map<String, Version> found = Version.identify();
        assertThat(found).as("Netty artifacts on the classpath").containsKeys("netty-common", "netty-codec-http", "netty-codec-http2");
        found.forEach((artifact, version) -> assertThat(Arrays.compare(numbers(version.artifactVersion()), pinned))
                .as("%s %s against the pinned %s", artifact, version.artifactVersion(), pin.group(1))
                .isGreaterThanOrEqualTo(0));
    }

    /** 4.1.138.Final -> [4, 1, 138]. */
    private static int[] numbers(String version) {
        return Arrays.stream(version.split("[.-]")).takeWhile(part -> part.matches("\\d+")).mapToInt(Integer::parseInt).toArray();
    }
}
