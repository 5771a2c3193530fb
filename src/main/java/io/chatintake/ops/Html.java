package io.chatintake.ops;

/** A tiny HTML writer: every text goes through {@link #escape}. */
final class Html {
    private final StringBuilder out = new StringBuilder();
    private boolean inSection;

    Html raw(String markup) {
        out.append(markup);
        return this;
    }

    Html text(String text) {
        out.append(escape(text));
        return this;
    }

    /** A form's hidden field. */
    Html hidden(String name, String value) {
        return raw("<input type=\"hidden\" name=\"").text(name).raw("\" value=\"").text(value).raw("\">");
    }

    void section(String id, String title) {
        if (inSection) {
            out.append("</section>");
        }
        inSection = true;
        out.append("<section id=\"").append(escape(id)).append("\"><h2>").append(escape(title)).append("</h2>");
    }

    void header(String... columns) {
        out.append("<table><thead><tr>");
        for (String c : columns) {
            out.append("<th>").append(escape(c)).append("</th>");
        }
        out.append("</tr></thead><tbody>");
    }

    /** @param id the row's element id (figures a reader or a test can point at), or null */
    void row(String id, String... cells) {
        out.append(id == null ? "<tr>" : "<tr id=\"" + escape(id) + "\">");
        cells(cells);
        out.append("</tr>");
    }

    /** A row whose last cells are written by hand (buttons): {@link #cells} then raw markup, then {@code </tr>}. */
    Html rowStart(String id) {
        out.append("<tr id=\"").append(escape(id)).append("\">");
        return this;
    }

    Html cells(String... cells) {
        for (String c : cells) {
            out.append("<td>").append(escape(c)).append("</td>");
        }
        return this;
    }

    void endTable() {
        out.append("</tbody></table>");
    }

    @Override
    public String toString() {
        return inSection ? out + "</section>" : out.toString();
    }

    static String escape(String text) {
        if (text == null) {
            return "";
        }
        StringBuilder s = new StringBuilder(text.length());
        for (char ch : text.toCharArray()) {
            switch (ch) {
                case '&' -> s.append("&amp;");
                case '<' -> s.append("&lt;");
                case '>' -> s.append("&gt;");
                case '"' -> s.append("&quot;");
                case '\'' -> s.append("&#39;");
                default -> s.append(ch);
            }
        }
        return s.toString();
    }
}
