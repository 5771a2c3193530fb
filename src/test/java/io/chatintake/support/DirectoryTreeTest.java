package io.chatintake.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DirectoryTreeTest {
    @TempDir
    Path work;

    @Test
    void removesTheDirectoryWithEverythingInItAndAMissingOneIsNothingToDo() throws Exception {
        Path root = work.resolve("scratch");
        Files.createDirectories(root.resolve("data/pg/base"));
        Files.writeString(root.resolve("data/pg/base/1"), "row");
        Files.writeString(root.resolve("runner.log"), "log");

        DirectoryTree.delete(root);

        assertThat(root).doesNotExist();
        assertThat(work).exists();
        DirectoryTree.delete(root);
    }
}
