/* hyocr — what export.c (the formats, page geometry) and export-pdf.c (the searchable PDF)
 * share. Not installed. */
#pragma once
#include "export.h"

G_BEGIN_DECLS

/* An image page becomes a PDF page of one point per pixel (ImageMagick's default too). cairo
 * 1.16 truncates a page size to whole points (its paginated surface takes ints) and clips the
 * page there, so a density that gives fractional sizes (300 ppi: 0.24 pt a pixel) would cut
 * the last pixels off; at 72 ppi the page holds the image exactly, pixel for pixel. */
#define HYOCR_EXPORT_IMAGE_PPI 72.0

typedef struct {
    bool   vector;         /* a PDF page: the points are its own */
    double w_pt, h_pt;     /* the page in points (1/72 inch) */
    int    w_px, h_px;     /* the original page in pixels: the image as decoded (upright), a PDF
                            * page at HYOCR_PDF_DEFAULT_DPI */
} hyocr_export_geometry;

bool  hyocr_export_page_geometry(const hyocr_export_page *p, hyocr_export_geometry *g, GError **error);
/* "scan.pdf, page 3", or the name alone for a document of one page. */
char *hyocr_export_page_label(const hyocr_export_page *p);

/* export-pdf.c */
bool  hyocr_export_write_pdf(const hyocr_export *ex, const char *path, GError **error);

G_END_DECLS
