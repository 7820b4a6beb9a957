/* report: the shortest decimal text of a score (the table's SCORE column, the JSON's score). */
#include <criterion/criterion.h>

#include "report.h"

static const char *fmt(float f)
{
    static char s[32];
    vs_format_float(f, s, sizeof(s));
    return s;
}

Test(format_float, shortest_text_that_reads_back)
{
    cr_assert_str_eq(fmt(7.5f), "7.5");
    cr_assert_str_eq(fmt(3.0f), "3");
    cr_assert_str_eq(fmt(0.1f), "0.1");
    cr_assert_str_eq(fmt(2.9166665f), "2.9166665");
    cr_assert_str_eq(fmt(0.0f), "0");
    cr_assert_str_eq(fmt(-4.25f), "-4.25");
}

Test(format_float, whole_numbers_with_trailing_zeros_stay_decimal)
{
    cr_assert_str_eq(fmt(10.0f), "10");
    cr_assert_str_eq(fmt(1960.0f), "1960");
    cr_assert_str_eq(fmt(100000.0f), "100000");
    cr_assert_str_eq(fmt(-200.0f), "-200");
    cr_assert_str_eq(fmt(0.0005f), "0.0005");
}

Test(format_float, exponent_outside_the_decimal_range)
{
    cr_assert_str_eq(fmt(1e-5f), "1e-05");
    cr_assert_str_eq(fmt(1e25f), "1e+25");
}
