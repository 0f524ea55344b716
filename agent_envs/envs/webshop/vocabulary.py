"""The word lists of the built-in catalog (:mod:`agent_envs.envs.webshop.generator`).

Product types follow WebShop's five categories (beauty, electronics, fashion, garden,
grocery): each has the search query that scraped it (WebShop's ``query``), its Amazon
category path, head nouns, title descriptors, an attribute pool (each attribute with the
slot it takes in an instruction: before the query, or after ``with``/``for``), option groups
and a price range. Everything here is invented for this package.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BRANDS", "PRODUCT_TYPES", "REVIEW_LINES", "ProductType"]


class ProductType(NamedTuple):
    category: str
    query: str
    path: tuple[str, ...]
    nouns: tuple[str, ...]
    descriptors: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]  # (attribute, slot: "pre" | "with" | "for")
    options: tuple[tuple[str, tuple[str, ...]], ...]  # (option name, values in shop order)
    price: tuple[float, float]


_SIZES = ("x-small", "small", "medium", "large", "x-large", "xx-large", "3x-large")
_CLOTHING_COLORS = (
    "black", "white", "navy blue", "heather gray", "red", "olive green", "light blue",
    "burgundy", "khaki", "pink", "charcoal", "royal blue", "beige", "mustard yellow",
)  # fmt: skip
_SHOE_SIZES = ("6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "12")
_HOME_COLORS = (
    "white", "black", "espresso", "walnut", "natural oak", "gray", "rustic brown",
    "navy", "cream", "sage green", "charcoal gray", "light gray",
)  # fmt: skip
_GADGET_COLORS = ("black", "white", "silver", "space gray", "blue", "rose gold", "red")
_SCENTS = ("unscented", "lavender", "coconut", "eucalyptus mint", "citrus", "rose", "vanilla")
_PACKS = ("pack of 1", "pack of 2", "pack of 3", "pack of 4", "pack of 6", "pack of 12")
_FLAVORS = (
    "original", "sea salt", "barbecue", "honey roasted", "dark chocolate", "vanilla",
    "cinnamon", "chili lime", "peanut butter", "mixed berry", "salted caramel",
)  # fmt: skip

PRODUCT_TYPES: tuple[ProductType, ...] = (
    # ------------------------------------------------------------------ beauty
    ProductType(
        "beauty", "shampoo",
        ("Beauty & Personal Care", "Hair Care", "Shampoo & Conditioner", "Shampoos"),
        ("Shampoo", "Hair Shampoo", "Daily Shampoo"),
        ("Moisturizing", "Volumizing", "Clarifying", "Repairing", "Gentle"),
        (("sulfate free", "pre"), ("paraben free", "pre"), ("cruelty free", "pre"),
         ("natural ingredients", "with"), ("dry hair", "for"), ("hair growth", "for"),
         ("tea tree", "with"), ("argan oil", "with"), ("color treated hair", "for")),
        (("size", ("8.4 fl oz", "12 fl oz", "16.9 fl oz", "33.8 fl oz")), ("scent", _SCENTS)),
        (6.0, 38.0),
    ),
    ProductType(
        "beauty", "face moisturizer",
        ("Beauty & Personal Care", "Skin Care", "Face", "Creams & Moisturizers"),
        ("Face Moisturizer", "Facial Cream", "Day Cream", "Night Cream"),
        ("Hydrating", "Lightweight", "Anti-Aging", "Oil-Free", "Soothing"),
        (("fragrance free", "pre"), ("hyaluronic acid", "with"), ("sensitive skin", "for"),
         ("dry skin", "for"), ("fine lines", "for"), ("vitamin c", "with"),
         ("non comedogenic", "pre"), ("dermatologist tested", "pre"), ("spf 30", "with")),
        (("size", ("1 fl oz", "1.7 fl oz", "2.5 fl oz", "3.4 fl oz")),),
        (9.0, 65.0),
    ),
    ProductType(
        "beauty", "lipstick",
        ("Beauty & Personal Care", "Makeup", "Lips", "Lipstick"),
        ("Lipstick", "Matte Lipstick", "Liquid Lipstick", "Lip Color"),
        ("Long Wearing", "Creamy", "Velvet", "Satin", "Bold"),
        (("long lasting", "pre"), ("highly pigmented", "pre"), ("vegan", "pre"),
         ("cruelty free", "pre"), ("shea butter", "with"), ("dry lips", "for"),
         ("waterproof", "pre")),
        (("color", ("nude beige", "ruby red", "berry", "coral pink", "mauve", "plum",
                    "rose pink", "brick red")),),
        (5.0, 28.0),
    ),
    ProductType(
        "beauty", "nail polish",
        ("Beauty & Personal Care", "Foot, Hand & Nail Care", "Nail Art & Polish", "Nail Polish"),
        ("Nail Polish", "Gel Nail Polish", "Nail Lacquer"),
        ("Quick Dry", "Glossy", "Chip Resistant", "Glitter", "Pastel"),
        (("quick drying", "pre"), ("non toxic", "pre"), ("long lasting", "pre"),
         ("easy apply", "pre"), ("high gloss", "with"), ("nail art", "for")),
        (("color", ("classic red", "baby pink", "black", "white", "lilac", "gold glitter",
                    "navy blue", "coral")), ("size", ("0.25 fl oz", "0.5 fl oz"))),
        (4.0, 22.0),
    ),
    ProductType(
        "beauty", "body wash",
        ("Beauty & Personal Care", "Personal Care", "Bath & Bathing Accessories", "Body Washes"),
        ("Body Wash", "Shower Gel", "Foaming Body Wash"),
        ("Nourishing", "Refreshing", "Exfoliating", "Calming", "Creamy"),
        (("natural ingredients", "with"), ("sensitive skin", "for"), ("paraben free", "pre"),
         ("shea butter", "with"), ("dry skin", "for"), ("plant based", "pre"),
         ("essential oils", "with")),
        (("scent", _SCENTS), ("size", ("12 fl oz", "16 fl oz", "22 fl oz", "32 fl oz"))),
        (5.0, 30.0),
    ),
    # ------------------------------------------------------------------ electronics
    ProductType(
        "electronics", "wireless earbuds",
        ("Electronics", "Headphones, Earbuds & Accessories", "Headphones & Earbuds",
         "Earbud Headphones"),
        ("Wireless Earbuds", "Bluetooth Earbuds", "True Wireless Earphones"),
        ("Noise Cancelling", "Sport", "Compact", "Hi-Fi", "Waterproof"),
        (("noise cancelling", "pre"), ("bluetooth 5.3", "with"), ("long battery life", "with"),
         ("charging case", "with"), ("running", "for"), ("water resistant", "pre"),
         ("built-in microphone", "with"), ("hands free", "pre")),
        (("color", _GADGET_COLORS),),
        (15.0, 160.0),
    ),
    ProductType(
        "electronics", "phone case",
        ("Cell Phones & Accessories", "Cases, Holsters & Sleeves", "Basic Cases"),
        ("Phone Case", "Protective Case", "Slim Case", "Clear Case"),
        ("Shockproof", "Slim", "Rugged", "Transparent", "Magnetic"),
        (("shock absorbing", "pre"), ("wireless charging", "with"), ("easy install", "pre"),
         ("scratch resistant", "pre"), ("card holder", "with"), ("drop protection", "with")),
        (("color", ("clear", "black", "navy blue", "pink", "purple", "green", "red")),
         ("style", ("iphone 13", "iphone 14", "iphone 15", "galaxy s22", "galaxy s23"))),
        (6.0, 35.0),
    ),
    ProductType(
        "electronics", "usb c charger",
        ("Electronics", "Computers & Accessories", "Laptop Accessories", "Chargers & Adapters"),
        ("USB C Charger", "Fast Charger", "Wall Charger", "Charging Block"),
        ("Compact", "Foldable", "Dual Port", "GaN", "Travel"),
        (("fast charging", "pre"), ("power delivery", "with"), ("dual port", "pre"),
         ("foldable plug", "with"), ("travel", "for"), ("overheat protection", "with")),
        (("color", ("white", "black")), ("size", ("20w", "30w", "45w", "65w", "100w"))),
        (9.0, 60.0),
    ),
    ProductType(
        "electronics", "hdmi cable",
        ("Electronics", "Television & Video", "Accessories", "Cables", "HDMI Cables"),
        ("HDMI Cable", "High Speed HDMI Cable", "Braided HDMI Cord"),
        ("8K", "4K", "Braided", "Ultra High Speed", "Gold Plated"),
        (("high speed", "pre"), ("gold plated", "pre"), ("braided nylon", "with"),
         ("ethernet", "with"), ("gaming", "for"), ("easy install", "pre")),
        (("size", ("3 feet", "6 feet", "10 feet", "15 feet", "25 feet")),
         ("style", ("1 pack", "2 pack", "3 pack"))),
        (5.0, 30.0),
    ),
    ProductType(
        "electronics", "bluetooth speaker",
        ("Electronics", "Portable Audio & Video", "Portable Speakers & Docks",
         "Portable Bluetooth Speakers"),
        ("Bluetooth Speaker", "Portable Speaker", "Wireless Speaker"),
        ("Waterproof", "Rugged", "Mini", "Loud", "Outdoor"),
        (("waterproof", "pre"), ("long battery life", "with"), ("stereo sound", "with"),
         ("outdoor", "for"), ("hands free", "pre"), ("heavy bass", "with")),
        (("color", _GADGET_COLORS),),
        (18.0, 150.0),
    ),
    # ------------------------------------------------------------------ fashion
    ProductType(
        "fashion", "women's dresses",
        ("Clothing, Shoes & Jewelry", "Women", "Clothing", "Dresses", "Casual"),
        ("Dress", "Maxi Dress", "Midi Dress", "Wrap Dress", "Sundress"),
        ("Floral", "Casual", "Elegant", "Boho", "Summer"),
        (("machine wash", "pre"), ("short sleeve", "with"), ("long sleeve", "with"),
         ("polyester spandex", "with"), ("daily wear", "for"), ("elastic waist", "with"),
         ("button closure", "with"), ("loose fit", "pre")),
        (("color", _CLOTHING_COLORS), ("size", _SIZES)),
        (14.0, 70.0),
    ),
    ProductType(
        "fashion", "men's t-shirts",
        ("Clothing, Shoes & Jewelry", "Men", "Clothing", "Shirts", "T-Shirts"),
        ("T-Shirt", "Crew Neck Tee", "Graphic Tee", "V-Neck T-Shirt"),
        ("Classic", "Slim Fit", "Athletic", "Vintage", "Soft"),
        (("cotton blend", "with"), ("machine wash", "pre"), ("short sleeve", "with"),
         ("moisture wicking", "pre"), ("regular fit", "pre"), ("everyday wear", "for"),
         ("tagless", "pre")),
        (("color", _CLOTHING_COLORS), ("size", _SIZES)),
        (8.0, 35.0),
    ),
    ProductType(
        "fashion", "men's running shoes",
        ("Clothing, Shoes & Jewelry", "Men", "Shoes", "Athletic", "Running", "Road Running"),
        ("Running Shoes", "Trail Running Shoes", "Walking Sneakers"),
        ("Lightweight", "Breathable", "Cushioned", "Non Slip", "Fashion"),
        (("rubber sole", "with"), ("arch support", "with"), ("non slip", "pre"),
         ("breathable mesh", "with"), ("memory foam", "with"), ("walking", "for"),
         ("lace up", "pre")),
        (("color", ("black", "white", "gray", "navy", "black white", "blue orange")),
         ("size", _SHOE_SIZES)),
        (25.0, 120.0),
    ),
    ProductType(
        "fashion", "women's leggings",
        ("Clothing, Shoes & Jewelry", "Women", "Clothing", "Active", "Active Leggings"),
        ("Leggings", "Yoga Pants", "High Waisted Leggings", "Workout Tights"),
        ("Buttery Soft", "Seamless", "Compression", "Squat Proof", "Athletic"),
        (("high waist", "with"), ("tummy control", "with"), ("yoga", "for"),
         ("pockets", "with"), ("four way stretch", "with"), ("machine wash", "pre"),
         ("polyester spandex", "with")),
        (("color", _CLOTHING_COLORS), ("size", _SIZES)),
        (12.0, 45.0),
    ),
    ProductType(
        "fashion", "men's watches",
        ("Clothing, Shoes & Jewelry", "Men", "Watches", "Wrist Watches"),
        ("Wrist Watch", "Analog Watch", "Chronograph Watch", "Dress Watch"),
        ("Classic", "Minimalist", "Military", "Luxury", "Sport"),
        (("stainless steel", "with"), ("water resistant", "pre"), ("leather strap", "with"),
         ("quartz movement", "with"), ("luminous hands", "with"), ("business", "for")),
        (("color", ("black", "silver", "gold", "brown", "blue", "rose gold")),),
        (20.0, 220.0),
    ),
    # ------------------------------------------------------------------ garden (home)
    ProductType(
        "garden", "console tables",
        ("Home & Kitchen", "Furniture", "Living Room Furniture", "Tables",
         "Sofa & Console Tables"),
        ("Console Table", "Sofa Table", "Entryway Table", "Hallway Table"),
        ("Narrow", "Rustic", "Industrial", "Farmhouse", "Modern"),
        (("solid wood", "with"), ("storage shelf", "with"), ("easy assemble", "pre"),
         ("metal frame", "with"), ("living room", "for"), ("space saving", "pre")),
        (("color", _HOME_COLORS),),
        (45.0, 420.0),
    ),
    ProductType(
        "garden", "throw pillow covers",
        ("Home & Kitchen", "Bedding", "Decorative Pillows, Inserts & Covers",
         "Throw Pillow Covers"),
        ("Throw Pillow Covers", "Cushion Covers", "Pillow Cases"),
        ("Decorative", "Boho", "Velvet", "Linen", "Farmhouse"),
        (("hidden zipper", "with"), ("machine washable", "pre"), ("living room", "for"),
         ("soft velvet", "with"), ("set of 2", "pre"), ("double sided", "pre")),
        (("color", _HOME_COLORS), ("size", ("16x16 inch", "18x18 inch", "20x20 inch",
                                            "12x20 inch"))),
        (8.0, 40.0),
    ),
    ProductType(
        "garden", "bath towels",
        ("Home & Kitchen", "Bath", "Towels", "Bath Towels"),
        ("Bath Towels", "Towel Set", "Bath Sheet"),
        ("Luxury", "Quick Dry", "Hotel Quality", "Plush", "Lightweight"),
        (("100% cotton", "with"), ("highly absorbent", "pre"), ("quick drying", "pre"),
         ("machine washable", "pre"), ("bathroom", "for"), ("soft touch", "with")),
        (("color", _HOME_COLORS), ("size", ("2 piece set", "4 piece set", "6 piece set"))),
        (15.0, 75.0),
    ),
    ProductType(
        "garden", "led desk lamp",
        ("Tools & Home Improvement", "Lighting & Ceiling Fans", "Lamps & Shades", "Desk Lamps"),
        ("LED Desk Lamp", "Table Lamp", "Reading Lamp"),
        ("Dimmable", "Eye-Caring", "Adjustable", "Modern", "Touch Control"),
        (("usb charging port", "with"), ("dimmable", "pre"), ("touch control", "with"),
         ("home office", "for"), ("energy saving", "pre"), ("eye caring", "pre")),
        (("color", ("black", "white", "silver", "wood grain")),),
        (16.0, 70.0),
    ),
    ProductType(
        "garden", "garden hose",
        ("Patio, Lawn & Garden", "Watering Equipment", "Garden Hoses"),
        ("Garden Hose", "Expandable Hose", "Water Hose"),
        ("Heavy Duty", "Expandable", "Lightweight", "Kink Free", "Flexible"),
        (("leak proof", "pre"), ("brass fittings", "with"), ("spray nozzle", "with"),
         ("easy storage", "pre"), ("outdoor", "for"), ("heavy duty", "pre")),
        (("size", ("25 feet", "50 feet", "75 feet", "100 feet")),
         ("color", ("green", "blue", "black", "gray"))),
        (18.0, 80.0),
    ),
    # ------------------------------------------------------------------ grocery
    ProductType(
        "grocery", "protein bars",
        ("Grocery & Gourmet Food", "Snack Foods", "Bars", "Protein Bars"),
        ("Protein Bars", "Snack Bars", "Nutrition Bars"),
        ("High Protein", "Low Sugar", "Keto Friendly", "Chewy", "Crunchy"),
        (("gluten free", "pre"), ("low sugar", "pre"), ("high protein", "pre"),
         ("non gmo", "pre"), ("plant based", "pre"), ("keto", "for"), ("real ingredients", "with")),
        (("flavor", _FLAVORS), ("size", ("pack of 6", "pack of 12", "pack of 15", "pack of 24"))),
        (10.0, 45.0),
    ),
    ProductType(
        "grocery", "ground coffee",
        ("Grocery & Gourmet Food", "Beverages", "Coffee, Tea & Cocoa", "Coffee", "Ground Coffee"),
        ("Ground Coffee", "Coffee", "Medium Roast Coffee", "Dark Roast Coffee"),
        ("Rich", "Smooth", "Bold", "Organic", "Artisan"),
        (("100% arabica", "pre"), ("fair trade", "pre"), ("usda organic", "pre"),
         ("low acid", "pre"), ("rich flavor", "with"), ("french press", "for")),
        (("flavor", ("original", "hazelnut", "french vanilla", "mocha", "caramel", "decaf")),
         ("size", ("12 ounce", "24 ounce", "32 ounce", "2 pound"))),
        (7.0, 40.0),
    ),
    ProductType(
        "grocery", "herbal tea",
        ("Grocery & Gourmet Food", "Beverages", "Coffee, Tea & Cocoa", "Tea", "Herbal"),
        ("Herbal Tea", "Tea Bags", "Loose Leaf Tea"),
        ("Caffeine Free", "Calming", "Organic", "Relaxing", "Soothing"),
        (("caffeine free", "pre"), ("usda organic", "pre"), ("non gmo", "pre"),
         ("individually wrapped", "pre"), ("sleep", "for"), ("natural ingredients", "with")),
        (("flavor", ("chamomile", "echinacea", "ginger", "lemon", "hibiscus", "rooibos")),
         ("size", _PACKS)),
        (4.0, 30.0),
    ),
    ProductType(
        "grocery", "mixed nuts",
        ("Grocery & Gourmet Food", "Snack Foods", "Nuts & Seeds", "Mixed Nuts"),
        ("Mixed Nuts", "Roasted Nuts", "Trail Mix", "Deluxe Nuts"),
        ("Roasted", "Salted", "Unsalted", "Premium", "Deluxe"),
        (("resealable bag", "with"), ("gluten free", "pre"), ("non gmo", "pre"),
         ("high protein", "pre"), ("kosher", "pre"), ("snacking", "for")),
        (("flavor", ("sea salt", "unsalted", "honey roasted", "smoked", "chili lime")),
         ("size", ("8 ounce", "16 ounce", "2 pound", "3 pound"))),
        (6.0, 35.0),
    ),
    ProductType(
        "grocery", "olive oil",
        ("Grocery & Gourmet Food", "Pantry Staples", "Cooking & Baking", "Oils", "Olive Oil"),
        ("Extra Virgin Olive Oil", "Olive Oil", "Cold Pressed Olive Oil"),
        ("Imported", "Organic", "Cold Pressed", "First Harvest", "Mediterranean"),
        (("cold pressed", "pre"), ("usda organic", "pre"), ("non gmo", "pre"),
         ("glass bottle", "with"), ("cooking", "for"), ("rich flavor", "with")),
        (("size", ("16.9 fl oz", "25.3 fl oz", "33.8 fl oz", "1 gallon")),),
        (8.0, 45.0),
    ),
)  # fmt: skip

BRANDS: dict[str, tuple[str, ...]] = {
    "beauty": ("Lumera", "Botanic Bay", "Velvette", "Puresence", "Aurelle", "Nordhaven",
               "Mira & Co", "Dewlight", "Calyx", "Solenne"),
    "electronics": ("Voltrix", "Soundcore Lab", "Nexivo", "Arcwave", "Pixelon", "Tronbit",
                    "Quanta", "Zephyr Audio", "Linkmate", "Orbix"),
    "fashion": ("Northline", "Urban Thread", "Vellora", "Stride & Co", "Maple Row",
                "Kestrel", "Hollis", "Brava", "Coastline", "Fenwick"),
    "garden": ("Oak & Ivy", "Hearthwood", "Casa Nova", "Greenfold", "Tidewell",
               "Brightnest", "Loftline", "Rivermill", "Homestead Co", "Pinecrest"),
    "grocery": ("Harvest Lane", "Golden Acre", "Sunmeadow", "True Roots", "Bramble Farms",
                "Olivara", "Nutrivo", "Morning Peak", "Highland Pantry", "Kind Acre"),
}  # fmt: skip

#: (score, title, body) templates of short reviews; ``{noun}`` is the product's noun.
REVIEW_LINES: tuple[tuple[int, str, str], ...] = (
    (5, "Exactly what I needed", "The {noun} arrived quickly and works as described."),
    (5, "Great value", "Very happy with this {noun}, would buy again."),
    (4, "Good, with one small issue", "Nice {noun} overall; the packaging could be better."),
    (4, "Solid choice", "Does the job well. The {noun} matches the photos."),
    (3, "It's okay", "The {noun} is fine but not as nice as I hoped."),
    (2, "Not for me", "The {noun} did not fit my needs; returning it."),
    (1, "Disappointed", "My {noun} stopped working after a week."),
)
