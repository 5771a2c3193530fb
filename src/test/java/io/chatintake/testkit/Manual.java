package io.chatintake.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** The user's manual as the tests read its examples: README.md, then the reference under src/main/docs. */
public final class Manual {
    private Manual() {
    }

    public static String text() {
        try (Stream<Path> docs = Files.list(Path.of("src/main/docs"))) {
            StringBuilder text = new StringBuilder(Files.readString(Path.of("README.md"), StandardCharsets.UTF_8));
            for (Path doc : docs.filter(p -> p.toString().endsWith(".md")).sorted().toList()) {
                text.append('\n').append(Files.readString(doc, StandardCharsets.UTF_8));
            }
            return text.toString();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
