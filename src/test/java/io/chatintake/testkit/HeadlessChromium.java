package io.chatintake.testkit;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.chatintake.support.DirectoryTree;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real headless Chromium (Debian's {@code chromium}; {@code .ci/run} installs it when missing),
 * started per call with a fresh profile and no network features of its own: loopback pages only.
 */
public final class HeadlessChromium {
    static final Path BINARY = Path.of("/usr/bin/chromium");

    private HeadlessChromium() {
    }

    /** The DOM after the page loaded and rendered, as Chromium serializes it. */
    public static String dumpDom(String url) {
        return run(List.of("--dump-dom", url));
    }

    /** A PNG of the rendered page, {@code width} x {@code height} pixels. */
    public static void screenshot(String url, Path png, int width, int height) {
        run(List.of("--screenshot=" + png.toAbsolutePath(), "--window-size=" + width + "," + height, url));
    }

    private static String run(List<String> args) {
        assumeTrue(Files.isExecutable(BINARY), "no " + BINARY + ": apt-get install -y chromium (.ci/run does)");
        Path profile = null;
        try {
            profile = Files.createTempDirectory("chat-intake-chromium");
            List<String> command = new ArrayList<>(List.of(BINARY.toString(), "--headless", "--no-sandbox", "--disable-gpu",
                    "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update",
                    "--disable-sync", "--user-data-dir=" + profile));
            command.addAll(args);
            Path stderr = profile.resolve("stderr.txt");
            Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
            byte[] out = process.getInputStream().readAllBytes();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("chromium did not finish within 60 s");
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("chromium exited " + process.exitValue() + ": " + Files.readString(stderr));
            }
            return new String(out, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot run chromium: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        } finally {
            deleteQuietly(profile);
        }
    }

    /** A browser profile directory, gone; one left behind is harmless. */
    static void deleteQuietly(Path dir) {
        if (dir == null) {
            return;
        }
        try {
            DirectoryTree.delete(dir);
        } catch (IOException | UncheckedIOException e) {
            // A temp profile left behind is harmless; Chromium's helpers may still be writing into it.
        }
    }
}
