/* hyocr-gtk — a parse answer rendered with native widgets. md4c walks the
 * Markdown; each paragraph, heading or list item becomes a label (Pango markup we
 * write ourselves, every piece of text escaped, so no answer can break it), a
 * Markdown table a GtkGrid, an HTML block its tables as grids (libxml2's HTML
 * parser, which recovers from whatever the model writes), code and formulas
 * monospaced text. Spans are capped so a wild colspan cannot make a huge grid.
 *
 * A streamed answer only grows, and is shown again after each batch of pieces:
 * it is cut into top-level blocks where a blank line ends one (outside a code
 * fence: paragraphs, headings, HTML blocks and Markdown tables all end there), and
 * only the blocks that changed are rendered again, a few milliseconds' worth per
 * turn of the main loop, so even a long document never holds the window up. */
#include "hyocr-rendered-view.h"
#include <libxml/HTMLparser.h>
#include <md4c.h>
#include <string.h>

#define MAX_SPAN    64     /* colspan / rowspan beyond this are read as this */
#define MAX_COLUMNS 256    /* cells past this column are dropped (no model writes such a table) */
#define INDENT      18     /* px per list or quote level */

typedef struct {
    char      *text;      /* the chunk of the answer */
    GPtrArray *widgets;   /* what it rendered to, in the box (the box owns them) */
} Chunk;

struct _HyocrRenderedView {
    GtkWidget  parent_instance;
    GtkWidget *blocks;    /* vertical GtkBox */
    GPtrArray *chunks;    /* Chunk, in order: what the box shows */
    GPtrArray *pending;   /* char *: the chunks still to render after them */
    guint      idle;
};

#define SLICE_US 8000     /* rendering per turn of the main loop */

G_DEFINE_FINAL_TYPE(HyocrRenderedView, hyocr_rendered_view, GTK_TYPE_WIDGET)

/* ---- building blocks ---- */

static GtkWidget *text_label(const char *markup, gboolean is_markup)
{
    GtkWidget *label = gtk_label_new(NULL);
    if (is_markup) gtk_label_set_markup(GTK_LABEL(label), markup);
    else gtk_label_set_text(GTK_LABEL(label), markup);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    gtk_label_set_wrap(GTK_LABEL(label), TRUE);
    gtk_label_set_wrap_mode(GTK_LABEL(label), PANGO_WRAP_WORD_CHAR);
    gtk_label_set_selectable(GTK_LABEL(label), TRUE);
    return label;
}

static GtkWidget *grid_new(void)
{
    GtkWidget *grid = gtk_grid_new();
    gtk_widget_add_css_class(grid, "hyocr-table");
    gtk_widget_set_halign(grid, GTK_ALIGN_START);
    return grid;
}

static GtkWidget *cell_new(const char *text, gboolean is_markup, gboolean header)
{
    GtkWidget *label = text_label(text, is_markup);
    gtk_label_set_max_width_chars(GTK_LABEL(label), 40);
    gtk_widget_set_valign(label, GTK_ALIGN_FILL);
    gtk_label_set_yalign(GTK_LABEL(label), 0);
    gtk_widget_add_css_class(label, "hyocr-cell");
    if (header) gtk_widget_add_css_class(label, "heading");
    return label;
}

/* ---- HTML tables (libxml2) ---- */

static gboolean is_element(const xmlNode *n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && n->name && !xmlStrcasecmp(n->name, BAD_CAST name);
}

static int span_of(xmlNode *cell, const char *attr)
{
    xmlChar *v = xmlGetProp(cell, BAD_CAST attr);
    int n = v ? atoi((const char *)v) : 1;
    xmlFree(v);
    return CLAMP(n, 1, MAX_SPAN);
}

/* A cell's text: whitespace collapsed as a browser does, a line break for <br>
 * and between paragraphs. */
static void gather_text(xmlNode *node, GString *out)
{
    for (xmlNode *n = node->children; n; n = n->next) {
        if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
            for (const char *p = (const char *)n->content; p && *p; p++) {
                gboolean space = g_ascii_isspace(*p);
                if (!space) g_string_append_c(out, *p);
                else if (out->len && out->str[out->len - 1] != ' ' && out->str[out->len - 1] != '\n')
                    g_string_append_c(out, ' ');
            }
        } else if (is_element(n, "br")) {
            g_string_append_c(out, '\n');
        } else if (n->type == XML_ELEMENT_NODE) {
            gboolean block = is_element(n, "p") || is_element(n, "div") || is_element(n, "li");
            if (block && out->len && out->str[out->len - 1] != '\n') g_string_append_c(out, '\n');
            gather_text(n, out);
        }
    }
}

static void add_html_row(GtkGrid *grid, xmlNode *tr, int row, GArray *busy)
{
    int col = 0;
    for (xmlNode *c = tr->children; c; c = c->next) {
        gboolean header = is_element(c, "th");
        if (!header && !is_element(c, "td")) continue;
        while (col < (int)busy->len && g_array_index(busy, int, col) > 0) col++;
        if (col >= MAX_COLUMNS) break;
        int w = MIN(span_of(c, "colspan"), MAX_COLUMNS - col), h = span_of(c, "rowspan");
        g_autoptr(GString) text = g_string_new(NULL);
        gather_text(c, text);
        g_strstrip(text->str);
        gtk_grid_attach(grid, cell_new(text->str, FALSE, header), col, row, w, h);
        if ((int)busy->len < col + w) g_array_set_size(busy, col + w);
        for (int i = col; i < col + w; i++) g_array_index(busy, int, i) = h;
        col += w;
    }
    for (guint i = 0; i < busy->len; i++)
        if (g_array_index(busy, int, i) > 0) g_array_index(busy, int, i)--;
}

/* Rows directly in the table or in its thead / tbody / tfoot, in order. */
static GtkWidget *html_table(xmlNode *table)
{
    GtkWidget *grid = grid_new();
    g_autoptr(GArray) busy = g_array_new(FALSE, TRUE, sizeof(int));
    int row = 0;
    for (xmlNode *n = table->children; n; n = n->next) {
        if (is_element(n, "tr")) {
            add_html_row(GTK_GRID(grid), n, row++, busy);
        } else if (is_element(n, "thead") || is_element(n, "tbody") || is_element(n, "tfoot")) {
            for (xmlNode *r = n->children; r; r = r->next)
                if (is_element(r, "tr")) add_html_row(GTK_GRID(grid), r, row++, busy);
        }
    }
    return grid;
}

static int add_html_tables(GtkBox *box, xmlNode *node, int margin)
{
    int n = 0;
    for (xmlNode *c = node; c; c = c->next) {
        if (is_element(c, "table")) {
            GtkWidget *grid = html_table(c);
            gtk_widget_set_margin_start(grid, margin);
            gtk_box_append(box, grid);
            n++;
        } else if (c->type == XML_ELEMENT_NODE) {
            n += add_html_tables(box, c->children, margin);
        }
    }
    return n;
}

/* ---- Markdown (md4c) ---- */

typedef struct {
    GtkBox   *box;
    GString  *text;        /* the leaf block being gathered: markup, or raw HTML / code */
    int       leaf;        /* MD_BLOCKTYPE of it, -1: none */
    unsigned  h_level;
    int       indent;      /* list and quote levels */
    GArray   *lists;       /* int per open list: the next number, or -1 for bullets */
    char     *bullet;      /* the open item's marker, until its first block shows it */
    GtkGrid  *grid;        /* the Markdown table being filled */
    int       row, col;
} Render;

static void append_escaped(GString *s, const char *text, gsize len)
{
    g_autofree char *esc = g_markup_escape_text(text, (gssize)len);
    g_string_append(s, esc);
}

/* &name; and &#n; as the character, escaped; anything unknown as written. */
static void append_entity(GString *s, const char *text, gsize len)
{
    static const struct { const char *name, *utf8; } named[] = {
        { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" }, { "&apos;", "'" },
        { "&nbsp;", "\xC2\xA0" }, { "&times;", "\xC3\x97" }, { "&middot;", "\xC2\xB7" },
        { "&mdash;", "\xE2\x80\x94" }, { "&ndash;", "\xE2\x80\x93" }, { "&hellip;", "\xE2\x80\xA6" },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(named); i++)
        if (strlen(named[i].name) == len && !memcmp(text, named[i].name, len)) {
            append_escaped(s, named[i].utf8, strlen(named[i].utf8));
            return;
        }
    if (len > 3 && text[1] == '#') {
        gboolean hex = text[2] == 'x' || text[2] == 'X';
        g_autofree char *digits = g_strndup(text + (hex ? 3 : 2), len - (hex ? 4 : 3));
        char *end = NULL;
        guint64 c = g_ascii_strtoull(digits, &end, hex ? 16 : 10);
        if (*digits && end && !*end && c > 0 && c <= 0x10FFFF && g_unichar_validate((gunichar)c)) {
            char utf8[6];
            append_escaped(s, utf8, (gsize)g_unichar_to_utf8((gunichar)c, utf8));
            return;
        }
    }
    append_escaped(s, text, len);
}

static void add_block(Render *r, GtkWidget *w)
{
    gtk_widget_set_margin_start(w, gtk_widget_get_margin_start(w) + r->indent * INDENT);
    gtk_box_append(r->box, w);
}

static void leaf_begin(Render *r, int type)
{
    r->leaf = type;
    g_string_truncate(r->text, 0);
    /* a list item's marker goes before its first paragraph */
    if (r->bullet && (type == MD_BLOCK_P || type == MD_BLOCK_H)) {
        append_escaped(r->text, r->bullet, strlen(r->bullet));
        g_string_append_c(r->text, ' ');
        g_clear_pointer(&r->bullet, g_free);
    }
}

static void flush_html(Render *r)
{
    htmlDocPtr doc = htmlReadMemory(r->text->str, (int)MIN(r->text->len, (gsize)G_MAXINT), NULL, "UTF-8",
                                    HTML_PARSE_RECOVER | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET);
    int tables = doc ? add_html_tables(r->box, xmlDocGetRootElement(doc), r->indent * INDENT) : 0;
    xmlFreeDoc(doc);
    if (tables) return;
    GtkWidget *label = text_label(g_strchomp(r->text->str), FALSE);
    gtk_widget_add_css_class(label, "monospace");
    add_block(r, label);
}

static void leaf_end(Render *r)
{
    int type = r->leaf;
    r->leaf = -1;
    if (type == MD_BLOCK_HTML) {
        flush_html(r);
    } else if (type == MD_BLOCK_CODE) {
        GtkWidget *label = text_label(g_strchomp(r->text->str), TRUE);
        gtk_widget_add_css_class(label, "monospace");
        add_block(r, label);
    } else if (type == MD_BLOCK_TH || type == MD_BLOCK_TD) {
        if (r->grid && r->col < MAX_COLUMNS)
            gtk_grid_attach(r->grid, cell_new(r->text->str, TRUE, type == MD_BLOCK_TH), r->col, r->row, 1, 1);
        r->col++;
    } else if (r->text->len) {
        GtkWidget *label = text_label(r->text->str, TRUE);
        if (type == MD_BLOCK_H) {
            g_autofree char *cls = g_strdup_printf("title-%u", CLAMP(r->h_level, 1, 4));
            gtk_widget_add_css_class(label, cls);
        }
        add_block(r, label);
    }
    g_string_truncate(r->text, 0);
}

static int enter_block(MD_BLOCKTYPE type, void *detail, void *data)
{
    Render *r = data;
    if (r->leaf == MD_BLOCK_LI) leaf_end(r);   /* a tight item's text, before its sub-list */
    switch (type) {
    case MD_BLOCK_QUOTE: r->indent++; break;
    case MD_BLOCK_UL: g_array_append_val(r->lists, (int){ -1 }); r->indent++; break;
    case MD_BLOCK_OL: {
        int start = (int)((MD_BLOCK_OL_DETAIL *)detail)->start;
        g_array_append_val(r->lists, start);
        r->indent++;
        break;
    }
    case MD_BLOCK_LI: {
        int *next = r->lists->len ? &g_array_index(r->lists, int, r->lists->len - 1) : NULL;
        g_free(r->bullet);
        r->bullet = next && *next >= 0 ? g_strdup_printf("%d.", (*next)++) : g_strdup("•");
        break;
    }
    case MD_BLOCK_HR: add_block(r, gtk_separator_new(GTK_ORIENTATION_HORIZONTAL)); break;
    case MD_BLOCK_H: r->h_level = ((MD_BLOCK_H_DETAIL *)detail)->level; leaf_begin(r, type); break;
    case MD_BLOCK_CODE: case MD_BLOCK_HTML: case MD_BLOCK_P: leaf_begin(r, type); break;
    case MD_BLOCK_TABLE:
        r->grid = GTK_GRID(grid_new());
        r->row = -1;
        break;
    case MD_BLOCK_TR: r->row++; r->col = 0; break;
    case MD_BLOCK_TH: case MD_BLOCK_TD: leaf_begin(r, type); break;
    default: break;
    }
    return 0;
}

static int leave_block(MD_BLOCKTYPE type, void *detail, void *data)
{
    Render *r = data;
    switch (type) {
    case MD_BLOCK_QUOTE: r->indent--; break;
    case MD_BLOCK_UL: case MD_BLOCK_OL: g_array_set_size(r->lists, r->lists->len - 1); r->indent--; break;
    case MD_BLOCK_LI:
        if (r->leaf == MD_BLOCK_LI) leaf_end(r);
        g_clear_pointer(&r->bullet, g_free);
        break;
    case MD_BLOCK_H: case MD_BLOCK_CODE: case MD_BLOCK_HTML: case MD_BLOCK_P: case MD_BLOCK_TH: case MD_BLOCK_TD:
        leaf_end(r);
        break;
    case MD_BLOCK_TABLE:
        add_block(r, GTK_WIDGET(r->grid));
        r->grid = NULL;
        break;
    default: break;
    }
    return 0;
}

static const char *span_tag(MD_SPANTYPE type)
{
    switch (type) {
    case MD_SPAN_EM: return "i";
    case MD_SPAN_STRONG: return "b";
    case MD_SPAN_DEL: return "s";
    case MD_SPAN_U: case MD_SPAN_A: return "u";
    case MD_SPAN_CODE: case MD_SPAN_LATEXMATH: case MD_SPAN_LATEXMATH_DISPLAY: return "tt";
    default: return NULL;
    }
}

/* Text outside any leaf block is a tight list item's: it becomes one. */
static void ensure_leaf(Render *r)
{
    if (r->leaf != -1) return;
    leaf_begin(r, MD_BLOCK_P);
    r->leaf = MD_BLOCK_LI;
}

static int enter_span(MD_SPANTYPE type, void *detail, void *data)
{
    Render *r = data;
    const char *tag = span_tag(type);
    if (tag) {
        ensure_leaf(r);
        g_string_append_printf(r->text, "<%s>", tag);
    }
    return 0;
}

static int leave_span(MD_SPANTYPE type, void *detail, void *data)
{
    Render *r = data;
    const char *tag = span_tag(type);
    if (tag) g_string_append_printf(r->text, "</%s>", tag);
    return 0;
}

static int on_text(MD_TEXTTYPE type, const MD_CHAR *text, MD_SIZE size, void *data)
{
    Render *r = data;
    ensure_leaf(r);
    if (r->leaf == MD_BLOCK_HTML) {   /* parsed whole when the block ends */
        g_string_append_len(r->text, text, size);
        return 0;
    }
    switch (type) {
    case MD_TEXT_NULLCHAR: g_string_append(r->text, "\xEF\xBF\xBD"); break;
    case MD_TEXT_BR: g_string_append_c(r->text, '\n'); break;
    case MD_TEXT_SOFTBR: g_string_append_c(r->text, ' '); break;
    case MD_TEXT_ENTITY: append_entity(r->text, text, size); break;
    case MD_TEXT_HTML:
        /* inline HTML shown as written, but for line breaks */
        if (size >= 3 && !g_ascii_strncasecmp(text, "<br", 3)) g_string_append_c(r->text, '\n');
        else append_escaped(r->text, text, size);
        break;
    default: append_escaped(r->text, text, size); break;
    }
    return 0;
}

static void chunk_free(Chunk *c)
{
    g_free(c->text);
    g_ptr_array_unref(c->widgets);
    g_free(c);
}

/* The top-level blocks: each ends with the blank line after it, except in a fenced
 * code block (``` or ~~~, closed by a run of the same at least as long). */
static GPtrArray *split_chunks(const char *text)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    const char *start = text, *p = text;
    char fence = 0;
    size_t fence_len = 0;
    while (*p) {
        const char *eol = strchr(p, '\n'), *next = eol ? eol + 1 : p + strlen(p);
        const char *q = p;
        while (*q == ' ' && q - p < 4) q++;
        size_t run = 0;
        while ((q[run] == '`' || q[run] == '~') && q[run] == q[0]) run++;
        if (run >= 3 && !fence) {
            fence = q[0];
            fence_len = run;
        } else if (run >= fence_len && fence && q[0] == fence) {
            fence = 0;
        }
        gboolean blank = TRUE;
        for (const char *c = p; c < next && blank; c++) blank = *c == ' ' || *c == '\t' || *c == '\r' || *c == '\n';
        if (blank && !fence && p > start) {
            g_ptr_array_add(out, g_strndup(start, (gsize)(next - start)));
            start = next;
        }
        p = next;
    }
    if (*start) g_ptr_array_add(out, g_strdup(start));
    return out;
}

/* Renders one chunk at the end of the box; its widgets are recorded. */
static Chunk *render_chunk(HyocrRenderedView *self, const char *text)
{
    GtkWidget *before = gtk_widget_get_last_child(self->blocks);
    Render r = { .box = GTK_BOX(self->blocks), .text = g_string_new(NULL), .leaf = -1,
                 .lists = g_array_new(FALSE, FALSE, sizeof(int)) };
    const MD_PARSER parser = {
        .flags = MD_FLAG_TABLES | MD_FLAG_STRIKETHROUGH | MD_FLAG_LATEXMATHSPANS | MD_FLAG_NOINDENTEDCODEBLOCKS,
        .enter_block = enter_block, .leave_block = leave_block,
        .enter_span = enter_span, .leave_span = leave_span, .text = on_text,
    };
    int rc = md_parse(text, (MD_SIZE)strlen(text), &parser, &r);
    if (r.grid) g_object_unref(g_object_ref_sink(r.grid));   /* a table the parse gave up in */
    g_string_free(r.text, TRUE);
    g_array_unref(r.lists);
    g_free(r.bullet);
    Chunk *c = g_new0(Chunk, 1);
    c->text = g_strdup(text);
    c->widgets = g_ptr_array_new();
    GtkWidget *w = before ? gtk_widget_get_next_sibling(before) : gtk_widget_get_first_child(self->blocks);
    for (GtkWidget *next; w; w = next) {
        next = gtk_widget_get_next_sibling(w);
        if (rc != 0) gtk_box_remove(GTK_BOX(self->blocks), w);   /* md4c gave up (out of memory) */
        else g_ptr_array_add(c->widgets, w);
    }
    if (rc != 0) {   /* the text as it is */
        GtkWidget *label = text_label(text, FALSE);
        gtk_box_append(GTK_BOX(self->blocks), label);
        g_ptr_array_add(c->widgets, label);
    }
    return c;
}

static gboolean render_some(gpointer data)
{
    HyocrRenderedView *self = data;
    gint64 end = g_get_monotonic_time() + SLICE_US;
    guint done = 0;
    while (done < self->pending->len && (done == 0 || g_get_monotonic_time() < end))
        g_ptr_array_add(self->chunks, render_chunk(self, self->pending->pdata[done++]));
    g_ptr_array_remove_range(self->pending, 0, done);
    if (self->pending->len) return G_SOURCE_CONTINUE;
    self->idle = 0;
    return G_SOURCE_REMOVE;
}

gboolean hyocr_rendered_view_is_rendering(HyocrRenderedView *self)
{
    return self->pending->len > 0;
}

void hyocr_rendered_view_set_markdown(HyocrRenderedView *self, const char *text)
{
    g_return_if_fail(HYOCR_IS_RENDERED_VIEW(self));
    g_autofree char *valid = g_utf8_make_valid(text ? text : "", -1);   /* labels take UTF-8 only */
    g_autoptr(GPtrArray) chunks = split_chunks(valid);
    guint same = 0;
    while (same < self->chunks->len && same < chunks->len &&
           !strcmp(((Chunk *)self->chunks->pdata[same])->text, chunks->pdata[same]))
        same++;
    for (guint i = same; i < self->chunks->len; i++) {
        Chunk *c = self->chunks->pdata[i];
        for (guint k = 0; k < c->widgets->len; k++) gtk_box_remove(GTK_BOX(self->blocks), c->widgets->pdata[k]);
    }
    g_ptr_array_set_size(self->chunks, same);
    g_ptr_array_set_size(self->pending, 0);
    for (guint i = same; i < chunks->len; i++) g_ptr_array_add(self->pending, g_steal_pointer(&chunks->pdata[i]));
    if (self->pending->len && !self->idle) self->idle = g_idle_add(render_some, self);
}

GtkWidget *hyocr_rendered_view_get_blocks(HyocrRenderedView *self)
{
    return self->blocks;
}

GtkWidget *hyocr_rendered_view_new(void)
{
    return g_object_new(HYOCR_TYPE_RENDERED_VIEW, NULL);
}

static void hyocr_rendered_view_dispose(GObject *object)
{
    HyocrRenderedView *self = HYOCR_RENDERED_VIEW(object);
    g_clear_handle_id(&self->idle, g_source_remove);
    g_clear_pointer(&self->chunks, g_ptr_array_unref);
    g_clear_pointer(&self->pending, g_ptr_array_unref);
    g_clear_pointer(&self->blocks, gtk_widget_unparent);
    G_OBJECT_CLASS(hyocr_rendered_view_parent_class)->dispose(object);
}

static void hyocr_rendered_view_class_init(HyocrRenderedViewClass *klass)
{
    G_OBJECT_CLASS(klass)->dispose = hyocr_rendered_view_dispose;
    gtk_widget_class_set_layout_manager_type(GTK_WIDGET_CLASS(klass), GTK_TYPE_BIN_LAYOUT);
    gtk_widget_class_set_css_name(GTK_WIDGET_CLASS(klass), "hyocr-rendered-view");
    gtk_widget_class_set_accessible_role(GTK_WIDGET_CLASS(klass), GTK_ACCESSIBLE_ROLE_GROUP);
}

static void hyocr_rendered_view_init(HyocrRenderedView *self)
{
    self->blocks = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12);
    gtk_widget_set_margin_start(self->blocks, 12);
    gtk_widget_set_margin_end(self->blocks, 12);
    gtk_widget_set_margin_top(self->blocks, 12);
    gtk_widget_set_margin_bottom(self->blocks, 12);
    gtk_widget_set_parent(self->blocks, GTK_WIDGET(self));
    self->chunks = g_ptr_array_new_with_free_func((GDestroyNotify)chunk_free);
    self->pending = g_ptr_array_new_with_free_func(g_free);
}
